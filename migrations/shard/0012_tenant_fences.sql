CREATE TABLE `tenant_fences` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`since` integer NOT NULL
);
--> statement-breakpoint
-- Hand-written below: the write fence of a moving tenant. Every table with a tenant_id refuses the tenant's
-- inserts and updates while it is fenced (frozen or purging), and its deletes while frozen; the whole D1 batch
-- fails with TENANT_MOVING, which callers turn into a retryable error. chunks_fts has no triggers (FTS5): it is
-- written only beside chunks, in the same batch. test/moves.test.ts checks that every tenant table has all three.
--> statement-breakpoint
CREATE TRIGGER `fence_items_insert` AFTER INSERT ON `items` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_items_update` AFTER UPDATE ON `items` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_items_delete` AFTER DELETE ON `items` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_chunks_insert` AFTER INSERT ON `chunks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_chunks_update` AFTER UPDATE ON `chunks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_chunks_delete` AFTER DELETE ON `chunks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_conversations_insert` AFTER INSERT ON `conversations` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_conversations_update` AFTER UPDATE ON `conversations` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_conversations_delete` AFTER DELETE ON `conversations` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_summaries_insert` AFTER INSERT ON `summaries` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_summaries_update` AFTER UPDATE ON `summaries` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_summaries_delete` AFTER DELETE ON `summaries` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_tasks_insert` AFTER INSERT ON `project_tasks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_tasks_update` AFTER UPDATE ON `project_tasks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_tasks_delete` AFTER DELETE ON `project_tasks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_links_insert` AFTER INSERT ON `links` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_links_update` AFTER UPDATE ON `links` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_links_delete` AFTER DELETE ON `links` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_keyword_stats_insert` AFTER INSERT ON `keyword_stats` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_keyword_stats_update` AFTER UPDATE ON `keyword_stats` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_keyword_stats_delete` AFTER DELETE ON `keyword_stats` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_local_vectors_insert` AFTER INSERT ON `local_vectors` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_local_vectors_update` AFTER UPDATE ON `local_vectors` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_local_vectors_delete` AFTER DELETE ON `local_vectors` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_vector_ids_insert` AFTER INSERT ON `vector_ids` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_vector_ids_update` AFTER UPDATE ON `vector_ids` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_vector_ids_delete` AFTER DELETE ON `vector_ids` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_tool_calls_insert` AFTER INSERT ON `tool_calls` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_tool_calls_update` AFTER UPDATE ON `tool_calls` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_tool_calls_delete` AFTER DELETE ON `tool_calls` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_deletions_insert` AFTER INSERT ON `project_deletions` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_deletions_update` AFTER UPDATE ON `project_deletions` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_deletions_delete` AFTER DELETE ON `project_deletions` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_entries_insert` AFTER INSERT ON `cache_entries` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_entries_update` AFTER UPDATE ON `cache_entries` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_entries_delete` AFTER DELETE ON `cache_entries` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_generations_insert` AFTER INSERT ON `cache_generations` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_generations_update` AFTER UPDATE ON `cache_generations` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_generations_delete` AFTER DELETE ON `cache_generations` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_link_clock_insert` AFTER INSERT ON `cache_link_clock` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_link_clock_update` AFTER UPDATE ON `cache_link_clock` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_link_clock_delete` AFTER DELETE ON `cache_link_clock` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_link_marks_insert` AFTER INSERT ON `cache_link_marks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_link_marks_update` AFTER UPDATE ON `cache_link_marks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_link_marks_delete` AFTER DELETE ON `cache_link_marks` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_counters_insert` AFTER INSERT ON `cache_counters` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_counters_update` AFTER UPDATE ON `cache_counters` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_cache_counters_delete` AFTER DELETE ON `cache_counters` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
