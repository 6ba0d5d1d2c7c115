using System.Collections.Concurrent;
using HybridKV.Benchmarks.LargerThanMemory;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// <see cref="ConcurrentDictionary{TKey, TValue}"/>, what a .NET user reaches for first. RMW is <c>AddOrUpdate</c>
/// with static lambdas and a state argument, so it allocates nothing per operation.
/// </summary>
public static class ConcurrentDictionaryYcsbStore
{
    public static IYcsbStore Create(YcsbStoreOptions options) => options.ValueBytes == 8
        ? new Store<long, LongValues>(options.Keys)
        : new Store<Value100, Value100s>(options.Keys);

    private sealed class Store<TValue, TValues>(long keys) : IYcsbStore
        where TValues : IYcsbValues<TValue>
    {
        private readonly ConcurrentDictionary<long, TValue> _dictionary =
            new(concurrencyLevel: Environment.ProcessorCount, capacity: (int)Math.Min(keys, int.MaxValue / 2));

        public string Name => "concurrentdictionary";

        public void Load(long keys, int threads, Action<long> progress) =>
            YcsbLoad.Split(keys, threads, progress, (first, end) =>
            {
                for (long key = first; key < end; key++)
                {
                    _dictionary[key] = TValues.From(key);
                }
            });

        public IYcsbWorker CreateWorker() => new Worker(_dictionary);

        public bool TryReadCounter(long key, out long counter)
        {
            bool found = _dictionary.TryGetValue(key, out TValue? value);
            counter = found ? TValues.Counter(value!) : 0;
            return found;
        }

        public void Dispose() => _dictionary.Clear();

        private sealed class Worker(ConcurrentDictionary<long, TValue> dictionary) : IYcsbWorker
        {
            public long Run(YcsbStreams streams, int start, int count)
            {
                long[] keys = streams.Keys;
                YcsbOperation[] operations = streams.Operations;
                long checksum = 0;
                for (int i = start; i < start + count; i++)
                {
                    long key = keys[i];
                    switch (operations[i])
                    {
                        case YcsbOperation.Read:
                            if (dictionary.TryGetValue(key, out TValue? value))
                            {
                                checksum += TValues.Counter(value);
                            }

                            break;
                        case YcsbOperation.Upsert:
                            dictionary[key] = TValues.From(i);
                            break;
                        case YcsbOperation.RMW:
                            dictionary.AddOrUpdate(key, static (_, delta) => TValues.From(delta),
                                static (_, old, delta) => TValues.Add(old, delta), 1L);
                            break;
                        default:
                            dictionary.TryRemove(key, out _);
                            break;
                    }
                }

                return checksum;
            }

            public void Complete(bool wait)
            {
            }

            public void Dispose()
            {
            }
        }
    }
}
