/**
 * A bounded map that forgets the least recently used entries first (Map keeps insertion order).
 * The bound is a total weight: the entry count by default, or e.g. bytes with a `weigh` function.
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>();
  private weight = 0;

  constructor(
    private readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    const size = this.weigh(value);
    // An entry heavier than the whole cache would only evict everything else and then itself.
    if (size > this.capacity) return;
    const previous = this.map.get(key);
    if (previous !== undefined) {
      this.weight -= this.weigh(previous);
      this.map.delete(key);
    }
    this.map.set(key, value);
    this.weight += size;
    for (const [oldest, old] of this.map) {
      if (this.weight <= this.capacity) break;
      this.map.delete(oldest);
      this.weight -= this.weigh(old);
    }
  }

  get size(): number {
    return this.map.size;
  }
}
