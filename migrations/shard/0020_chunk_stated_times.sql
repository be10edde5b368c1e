ALTER TABLE `chunks` ADD `stated_times` text;-- Chunks written before this have none: search resolves their text's times against the item's time as it reads them
-- (src/core/memory/stated-times.ts), the same result the write would have kept.
