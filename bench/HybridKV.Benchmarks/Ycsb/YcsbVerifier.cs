namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// Checks a sample of keys after a store's run against what the run's operations imply, without a shadow copy of the
/// store: every value is a function of where it was written. A loaded key's counter is the key; an upsert at stream
/// position i writes counter i; an RMW adds 1. Each thread runs contiguous stretches of its own stream (the runner
/// records where each stretch began and how many operations it ran), so for a sampled key the verifier knows how many
/// RMWs every thread applied to it and where each thread last upserted it. Then the key's counter must be:
/// <list type="bullet">
/// <item>no upsert and no delete touched it: the key plus the number of RMWs, exactly;</item>
/// <item>upserts and no RMW: one of the threads' last upserts (the last in global order is the last of its thread);</item>
/// <item>upserts and RMWs: a candidate of the above (or the key) plus 0 to the number of RMWs;</item>
/// <item>a delete touched it: not checked (counted apart).</item>
/// </list>
/// The sample is about 1,000 keys spread by a hash over the key space plus the first 1,024 keys of each thread's
/// stream, so that a zipfian run's hot keys are in it. Counting costs one pass over each thread's stream plus one pass
/// per recorded stretch, bounded by the stream's length (stretches that wrap around it are counted by multiplication).
/// </summary>
public sealed class YcsbVerifier
{
    private const int HeadKeys = 1024;
    private const long HashedKeys = 1024;

    private readonly YcsbStreams[] _streams;
    private readonly long _keys;
    private readonly List<(int Start, long Count)>[] _stretches;

    /// <summary>A verifier for one store's run over <paramref name="streams"/> (one per thread).</summary>
    public YcsbVerifier(YcsbStreams[] streams, int threads, long keys)
    {
        _streams = streams;
        _keys = keys;
        _stretches = [.. Enumerable.Range(0, threads).Select(_ => new List<(int, long)>())];
    }

    /// <summary>Records that thread <paramref name="thread"/> ran <paramref name="count"/> operations of its stream
    /// from <paramref name="start"/> on (wrapping around), after every stretch recorded before for that thread.</summary>
    public void Record(int thread, int start, long count)
    {
        lock (_stretches[thread])
        {
            _stretches[thread].Add((start, count));
        }
    }

    /// <summary>Reads every sampled key from <paramref name="store"/> and compares it with what the run implies.</summary>
    public YcsbVerification Verify(IYcsbStore store)
    {
        Dictionary<long, KeyHistory> sample = Sample();
        for (int thread = 0; thread < _stretches.Length; thread++)
        {
            Count(thread, sample);
        }

        int checkedKeys = 0;
        int skipped = 0;
        var failures = new List<string>();
        foreach ((long key, KeyHistory history) in sample)
        {
            if (history.Deleted)
            {
                skipped++;
                continue;
            }

            checkedKeys++;
            bool found = store.TryReadCounter(key, out long counter);
            string? failure = Check(key, history, found, counter);
            if (failure is not null)
            {
                failures.Add(failure);
            }
        }

        return new YcsbVerification(sample.Count, checkedKeys, skipped, failures.Count, failures.Take(5).ToArray());
    }

    private static string? Check(long key, KeyHistory history, bool found, long counter)
    {
        if (!found)
        {
            return $"key {key}: not found";
        }

        long rmws = history.Rmws;
        if (history.LastUpserts.Count == 0)
        {
            return counter == key + rmws ? null : $"key {key}: counter {counter}, expected {key} + {rmws} RMWs";
        }

        if (rmws == 0)
        {
            return history.LastUpserts.Contains(counter) ? null
                : $"key {key}: counter {counter}, expected one of the last upserts {string.Join(" ", history.LastUpserts)}";
        }

        return history.LastUpserts.Append(key).Any(candidate => counter >= candidate && counter <= candidate + rmws) ? null
            : $"key {key}: counter {counter}, expected a last upsert or the key plus 0 to {rmws} RMWs";
    }

    private Dictionary<long, KeyHistory> Sample()
    {
        var sample = new Dictionary<long, KeyHistory>();
        long step = Math.Max(1, _keys / HashedKeys);
        for (long i = 0; i < Math.Min(_keys, HashedKeys); i++)
        {
            // Spread over the key space and away from any stride the streams could have.
            long key = (long)((ulong)KeyHashing.Mix(i * step) % (ulong)_keys);
            sample.TryAdd(key, new KeyHistory());
        }

        foreach (YcsbStreams stream in _streams.Take(_stretches.Length))
        {
            foreach (long key in stream.Keys.Take(HeadKeys))
            {
                sample.TryAdd(key, new KeyHistory());
            }
        }

        return sample;
    }

    /// <summary>Adds thread <paramref name="thread"/>'s RMWs, deletes and last upserts to the sampled keys.</summary>
    private void Count(int thread, Dictionary<long, KeyHistory> sample)
    {
        YcsbStreams stream = _streams[thread];
        int length = stream.Keys.Length;
        long[]? wholeStreamRmws = null; // per sampled key, in the order of `keys`, counted when a stretch wraps
        long[] keys = [.. sample.Keys];
        var lastUpsert = new Dictionary<long, long>();
        foreach ((int start, long count) in _stretches[thread])
        {
            long wraps = count / length;
            int remainder = (int)(count % length);
            if (wraps > 0)
            {
                wholeStreamRmws ??= CountWholeStream(stream, keys);
                for (int k = 0; k < keys.Length; k++)
                {
                    sample[keys[k]].Rmws += (wraps - 1) * wholeStreamRmws[k];
                }

                // The remainder ran first, then the last whole pass: that pass decides the last upserts.
                Scan(stream, start, remainder, sample, lastUpsert);
                Scan(stream, (int)((start + (long)remainder) % length), length, sample, lastUpsert);
            }
            else
            {
                Scan(stream, start, remainder, sample, lastUpsert);
            }
        }

        foreach ((long key, long position) in lastUpsert)
        {
            sample[key].LastUpserts.Add(position);
        }
    }

    private static long[] CountWholeStream(YcsbStreams stream, long[] keys)
    {
        var index = new Dictionary<long, int>(keys.Length);
        for (int k = 0; k < keys.Length; k++)
        {
            index[keys[k]] = k;
        }

        long[] rmws = new long[keys.Length];
        for (int i = 0; i < stream.Keys.Length; i++)
        {
            if (stream.Operations[i] == YcsbOperation.RMW && index.TryGetValue(stream.Keys[i], out int k))
            {
                rmws[k]++;
            }
        }

        return rmws;
    }

    /// <summary>Applies positions <paramref name="start"/> to <paramref name="start"/> + <paramref name="count"/> - 1
    /// (wrapping) of the stream, in order, to the sampled keys.</summary>
    private static void Scan(YcsbStreams stream, int start, int count, Dictionary<long, KeyHistory> sample,
        Dictionary<long, long> lastUpsert)
    {
        int length = stream.Keys.Length;
        for (int n = 0; n < count; n++)
        {
            int i = (int)(((long)start + n) % length);
            if (!sample.TryGetValue(stream.Keys[i], out KeyHistory? history))
            {
                continue;
            }

            switch (stream.Operations[i])
            {
                case YcsbOperation.RMW:
                    history.Rmws++;
                    break;
                case YcsbOperation.Upsert:
                    lastUpsert[stream.Keys[i]] = i;
                    break;
                case YcsbOperation.Delete:
                    history.Deleted = true;
                    break;
                default:
                    break;
            }
        }
    }

    private sealed class KeyHistory
    {
        public long Rmws { get; set; }

        public bool Deleted { get; set; }

        /// <summary>Per thread that upserted the key, the stream position (the counter) of its last upsert.</summary>
        public List<long> LastUpserts { get; } = [];
    }
}

/// <summary>What a run's verification found: keys sampled, checked, skipped (deleted during the run), and the first
/// few failures.</summary>
public sealed record YcsbVerification(int Sampled, int Checked, int Skipped, int Failed, IReadOnlyList<string> Failures)
{
    /// <summary>Whether every checked key held what the run implies.</summary>
    public bool Ok => Failed == 0;

    /// <inheritdoc />
    public override string ToString() =>
        $"sampled={Sampled} checked={Checked} skipped_deleted={Skipped} failed={Failed}" +
        (Failures.Count > 0 ? " first: " + string.Join("; ", Failures) : "");
}
