//! Dream store on a directory.
