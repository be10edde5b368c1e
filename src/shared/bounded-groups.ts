/**
 * The values in order, in consecutive groups of at most `count` values and `size` in all (a value
 * larger than `size` goes alone): how background jobs split their reads so one D1 answer stays small
 * in a 128 MB isolate.
 */
export function boundedGroups<T>(
  values: readonly T[],
  limits: { count: number; size: number },
  sizeOf: (value: T) => number,
): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let total = 0;
  for (const value of values) {
    const size = sizeOf(value);
    if (group.length > 0 && (group.length === limits.count || total + size > limits.size)) {
      groups.push(group);
      group = [];
      total = 0;
    }
    group.push(value);
    total += size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
