CREATE TABLE `tenant_usage` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`items` integer DEFAULT 0 NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	`pending_jobs` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Hand-written below: tenant_usage follows items through triggers, so a write reads its tenant's usage in one row
-- (src/core/tenants/quotas.ts) and never counts rows. bytes: the UTF-8 bytes of content (CAST AS BLOB), as the
-- write path counts them; pending_jobs: items not embedded yet (embedded_at IS NULL). A statement the fence
-- triggers of 0012 refuse (TENANT_MOVING) is rolled back whole, these updates with it. A tenant's row is not
-- fenced and not copied by a move: moves.ts writes the frozen source's row on the target at the switch.
--> statement-breakpoint
INSERT INTO `tenant_usage` (`tenant_id`, `items`, `bytes`, `pending_jobs`)
SELECT `tenant_id`, COUNT(*), COALESCE(SUM(length(CAST(`content` AS BLOB))), 0), COALESCE(SUM(`embedded_at` IS NULL), 0) FROM `items` GROUP BY `tenant_id`;
--> statement-breakpoint
CREATE TRIGGER `usage_items_insert` AFTER INSERT ON `items` BEGIN
  INSERT INTO `tenant_usage` (`tenant_id`, `items`, `bytes`, `pending_jobs`) VALUES (NEW.`tenant_id`, 1, length(CAST(NEW.`content` AS BLOB)), NEW.`embedded_at` IS NULL)
  ON CONFLICT (`tenant_id`) DO UPDATE SET `items` = `items` + 1, `bytes` = `bytes` + excluded.`bytes`, `pending_jobs` = `pending_jobs` + excluded.`pending_jobs`;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_items_delete` AFTER DELETE ON `items` BEGIN
  UPDATE `tenant_usage` SET `items` = `items` - 1, `bytes` = `bytes` - length(CAST(OLD.`content` AS BLOB)), `pending_jobs` = `pending_jobs` - (OLD.`embedded_at` IS NULL)
  WHERE `tenant_id` = OLD.`tenant_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_items_embedded` AFTER UPDATE OF `embedded_at` ON `items` WHEN (OLD.`embedded_at` IS NULL) <> (NEW.`embedded_at` IS NULL) BEGIN
  UPDATE `tenant_usage` SET `pending_jobs` = `pending_jobs` + (NEW.`embedded_at` IS NULL) - (OLD.`embedded_at` IS NULL) WHERE `tenant_id` = NEW.`tenant_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_items_content` AFTER UPDATE OF `content` ON `items` WHEN OLD.`content` IS NOT NEW.`content` BEGIN
  UPDATE `tenant_usage` SET `bytes` = `bytes` + length(CAST(NEW.`content` AS BLOB)) - length(CAST(OLD.`content` AS BLOB)) WHERE `tenant_id` = NEW.`tenant_id`;
END;
