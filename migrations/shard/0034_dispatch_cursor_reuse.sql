-- Hand-written: drizzle cannot express triggers. The per-minute dispatch reads the items written since its cursor by
-- rowid (src/jobs/dispatch-new-items.ts), and SQLite gives a new row the largest rowid plus one: once the newest items
-- are deleted (a tenant moved away or deleted, a project or memories deleted), the next items written take rowids at or
-- below the cursor, and the dispatch would pass them by. A deletion that leaves the cursor above every rowid brings it
-- down to the largest, so the next items written are after it. The condition reads two rows a deleted item; the
-- update runs only when the newest rows go.
CREATE TRIGGER `dispatch_cursor_after_delete` AFTER DELETE ON `items`
WHEN (SELECT dispatch_cursor FROM shard_identity WHERE id = 1) > (SELECT COALESCE(MAX(rowid), 0) FROM items)
BEGIN
  UPDATE shard_identity SET dispatch_cursor = (SELECT COALESCE(MAX(rowid), 0) FROM items) WHERE id = 1;
END;
