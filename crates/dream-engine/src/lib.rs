//! Dream's engine: sessions, the dream pass, the write gate, recall and its firewall.
