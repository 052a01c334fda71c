//! Dream's RecordStore on Redis, shared by many processes and hosts, with leases and fencing.
