//! Encryption at rest (AES-256-GCM) over any Dream RecordStore.
