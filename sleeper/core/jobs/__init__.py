"""Job and message models with Sleeper's wire JSON: ingest, bulk import, compaction, partition splitting and state
store commit requests. Readers raise ``MessageError`` subclasses naming the JSON path of a bad value."""
