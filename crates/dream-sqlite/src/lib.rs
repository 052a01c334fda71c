//! Dream's RecordStore on one SQLite database file.
