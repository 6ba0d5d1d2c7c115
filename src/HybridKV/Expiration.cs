namespace HybridKV;

/// <summary>
/// When a value written by an upsert or a read-modify-write expires: after a time to live, at a point in time, or
/// never. An expired value reads as not found (a read-modify-write starts a new value with its initial updater), and
/// compaction drops it. Expiry is decided with the store's clock (<see cref="StoreSettings.TimeProvider"/>), to the
/// millisecond.
/// </summary>
/// <remarks>
/// A value's expiry is stored with its record and never changed in place: a write that sets or removes an expiry
/// appends a new record (as a write outside the mutable region does), while a read-modify-write without an
/// <see cref="Expiration"/> updates in place and keeps the value's expiry.
/// </remarks>
public readonly record struct Expiration
{
    private readonly long _value;
    private readonly ExpirationKind _kind;

    private Expiration(ExpirationKind kind, long value)
    {
        _kind = kind;
        _value = value;
    }

    private enum ExpirationKind : byte
    {
        Never,
        After,
        At,
    }

    /// <summary>The value never expires (a read-modify-write given this removes the value's expiry).</summary>
    public static Expiration Never => default;

    /// <summary>The value expires <paramref name="timeToLive"/> after the operation is issued.</summary>
    /// <param name="timeToLive">More than zero.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeToLive"/> is zero or negative.</exception>
    public static Expiration After(TimeSpan timeToLive)
    {
        if (timeToLive <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(timeToLive), timeToLive,
                "A time to live must be more than zero; delete the key to remove it now.");
        }

        return new Expiration(ExpirationKind.After, timeToLive.Ticks);
    }

    /// <summary>
    /// The value expires at <paramref name="time"/>; a time already past writes a value that reads as not found at once.
    /// </summary>
    public static Expiration At(DateTimeOffset time) => new(ExpirationKind.At, time.UtcTicks);

    /// <summary>Whether this is <see cref="Never"/>.</summary>
    public bool IsNever => _kind == ExpirationKind.Never;

    /// <summary>
    /// The expiry as a record stores it: milliseconds since the Unix epoch, rounded up, from 1 (a time at or before
    /// the epoch) to the last millisecond a <see cref="DateTimeOffset"/> holds; or <see cref="ExpiryTime.Never"/>. A
    /// time to live counts from <paramref name="clock"/>'s now.
    /// </summary>
    internal long ToRecordTime(TimeProvider clock)
    {
        if (_kind == ExpirationKind.Never)
        {
            return ExpiryTime.Never;
        }

        long utcTicks = _kind == ExpirationKind.After
            ? clock.GetUtcNow().UtcTicks + Math.Min(_value, DateTimeOffset.MaxValue.UtcTicks)
            : _value;
        long sinceEpoch = Math.Min(utcTicks, DateTimeOffset.MaxValue.UtcTicks) - DateTimeOffset.UnixEpoch.UtcTicks;
        long milliseconds = (sinceEpoch + TimeSpan.TicksPerMillisecond - 1) / TimeSpan.TicksPerMillisecond;
        return Math.Clamp(milliseconds, 1, DateTimeOffset.MaxValue.ToUnixTimeMilliseconds());
    }

    /// <inheritdoc/>
    public override string ToString() => _kind switch
    {
        ExpirationKind.After => $"after {TimeSpan.FromTicks(_value)}",
        ExpirationKind.At => $"at {new DateTimeOffset(_value, TimeSpan.Zero):O}",
        _ => "never",
    };
}

/// <summary>What an operation carries about the expiry of the value it writes, in the record's unit.</summary>
internal static class ExpiryTime
{
    /// <summary>No expiry given: an upsert writes a value without one; a read-modify-write keeps the value's.</summary>
    public const long Keep = 0;

    /// <summary>The value written has no expiry (a read-modify-write removes the value's).</summary>
    public const long Never = -1;

    /// <summary>Whether <paramref name="expiry"/> is a time (milliseconds since the Unix epoch) rather than a mode.</summary>
    public static bool IsTime(long expiry) => expiry > 0;
}
