ALTER TABLE `chunks` ADD `project` text;
--> statement-breakpoint
-- Hand-written below: every chunk takes its item's project (src/db/schema.ts says why). One statement through the
-- items' primary key; a chunk written by an older Worker after this runs keeps NULL, which search lets through.
UPDATE `chunks` SET `project` = (SELECT `project` FROM `items` WHERE `items`.`id` = `chunks`.`item_id`);
