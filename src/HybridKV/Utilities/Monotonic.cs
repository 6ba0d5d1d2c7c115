namespace HybridKV.Utilities;

/// <summary>Lock-free "raise to at least" updates for the log's offsets, which only ever move forward.</summary>
internal static class Monotonic
{
    /// <summary>Raises <paramref name="location"/> to <paramref name="candidate"/> if that is larger.</summary>
    /// <returns><see langword="true"/> if this call moved the value.</returns>
    public static bool TryRaise(ref long location, long candidate)
    {
        long seen = Volatile.Read(ref location);
        while (candidate > seen)
        {
            long observed = Interlocked.CompareExchange(ref location, candidate, seen);
            if (observed == seen)
            {
                return true;
            }

            seen = observed;
        }

        return false;
    }

    /// <summary>Raises <paramref name="location"/> to <paramref name="candidate"/> if that is larger.</summary>
    /// <returns>The value after the call.</returns>
    public static long Raise(ref long location, long candidate)
    {
        TryRaise(ref location, candidate);
        return Volatile.Read(ref location);
    }
}
