namespace HybridKV.Tests.Support;

/// <summary>A clock that moves only when a test moves it, to the millisecond.</summary>
public sealed class ManualClock : TimeProvider
{
    private long _milliseconds;

    /// <param name="start">Milliseconds since the Unix epoch the clock starts at.</param>
    public ManualClock(long start = 1_800_000_000_000) => _milliseconds = start;

    /// <summary>Milliseconds since the Unix epoch.</summary>
    public long Milliseconds => Interlocked.Read(ref _milliseconds);

    /// <summary>Moves the clock on by <paramref name="milliseconds"/>.</summary>
    public void Advance(long milliseconds) => Interlocked.Add(ref _milliseconds, milliseconds);

    /// <inheritdoc/>
    public override DateTimeOffset GetUtcNow() => DateTimeOffset.FromUnixTimeMilliseconds(Milliseconds);
}
