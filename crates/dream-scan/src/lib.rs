//! Dream's injection and secret scanner: pure, no I/O.
