using HybridKV.Server.Storage;

namespace HybridKV.Server.Commands;

/// <summary>GET, SET, MGET, MSET, INCR/DECR(BY), APPEND, STRLEN, GETDEL.</summary>
internal static unsafe class StringCommands
{
    public static CommandOutcome Get(CommandContext c, CommandFrame f)
    {
        if (!c.ReadOrDefer(f[1], RespOperation.Get))
        {
            return CommandOutcome.Deferred;
        }

        WriteValueOrNull(c);
        return CommandOutcome.Done;
    }

    /// <summary>The reply of a GET whose read was deferred, once it has completed.</summary>
    public static void FinishGet(CommandContext c) => WriteValueOrNull(c);

    public static void MGet(CommandContext c, CommandFrame f)
    {
        c.Writer.WriteArrayHeader(f.Count - 1);
        for (int i = 1; i < f.Count; i++)
        {
            c.Read(f[i], RespOperation.Get);
            WriteValueOrNull(c);
        }
    }

    public static void MSet(CommandContext c, CommandFrame f)
    {
        for (int i = 1; i + 1 < f.Count; i += 2)
        {
            c.Set(f[i], f[i + 1], 0);
        }

        c.Writer.WriteOk();
    }

    /// <summary>SET key value [NX | XX] [GET] [EX s | PX ms | EXAT s | PXAT ms].</summary>
    public static void Set(CommandContext c, CommandFrame f)
    {
        bool ifAbsent = false, ifPresent = false, get = false;
        long expiryMs = 0;
        for (int i = 3; i < f.Count; i++)
        {
            ReadOnlySpan<byte> option = f[i];
            if (CommandNames.Is(option, "NX"u8) && !ifPresent)
            {
                ifAbsent = true;
            }
            else if (CommandNames.Is(option, "XX"u8) && !ifAbsent)
            {
                ifPresent = true;
            }
            else if (CommandNames.Is(option, "GET"u8))
            {
                get = true;
            }
            else if (expiryMs == 0 && i + 1 < f.Count && ExpiryOption(option) is { } unit)
            {
                if (!Replies.TryParseLong(f[++i], out long amount))
                {
                    c.Writer.WriteError(Replies.NotInteger);
                    return;
                }

                if (!TryExpiry(unit, amount, out expiryMs))
                {
                    c.Writer.WriteError("ERR invalid expire time in 'set' command");
                    return;
                }
            }
            else
            {
                c.Writer.WriteError(Replies.Syntax);
                return;
            }
        }

        ReadOnlySpan<byte> key = f[1];
        ReadOnlySpan<byte> value = f[2];
        if (!ifAbsent && !ifPresent && !get)
        {
            c.Set(key, value, expiryMs);
            c.Writer.WriteOk();
            return;
        }

        if (ifAbsent || ifPresent)
        {
            // Checked first so that the common outcome (nothing to do) writes nothing; the update below decides
            // atomically all the same, since another connection may change the key in between.
            c.Read(key, get ? RespOperation.Get : RespOperation.Exists);
            if (c.Results.Found == ifAbsent)
            {
                WriteSkipped(c, get);
                return;
            }
        }

        RespOperation operation = ifAbsent ? RespOperation.SetIfAbsent
            : ifPresent ? RespOperation.SetIfPresent
            : RespOperation.SetAndGet;
        fixed (byte* data = value)
        {
            var input = new RespInput(operation, c.Results, data, value.Length, header: expiryMs);
            if (ifAbsent && expiryMs == 0)
            {
                // A key created here has no expiry, and one another connection created meanwhile keeps its own.
                c.Update(key, in input);
            }
            else
            {
                c.Update(key, in input, expiryMs > 0 ? CommandContext.ExpirationAt(expiryMs) : Expiration.Never);
            }
        }

        if (!c.Results.Applied)
        {
            WriteSkipped(c, get);
        }
        else if (get)
        {
            WriteValueOrNull(c);
        }
        else
        {
            c.Writer.WriteOk();
        }
    }

    /// <summary>SETNX key value: SET NX replying 1 or 0.</summary>
    public static void SetNx(CommandContext c, CommandFrame f)
    {
        ReadOnlySpan<byte> key = f[1];
        ReadOnlySpan<byte> value = f[2];
        c.Read(key, RespOperation.Exists);
        if (!c.Results.Found)
        {
            fixed (byte* data = value)
            {
                var input = new RespInput(RespOperation.SetIfAbsent, c.Results, data, value.Length);
                c.Update(key, in input);
            }
        }

        c.Writer.WriteInteger(c.Results.Applied ? 1 : 0);
    }

    /// <summary>SETEX key seconds value, PSETEX key milliseconds value.</summary>
    public static void SetEx(CommandContext c, CommandFrame f, long millisecondsPerUnit)
    {
        if (!Replies.TryParseLong(f[2], out long amount))
        {
            c.Writer.WriteError(Replies.NotInteger);
            return;
        }

        if (!TryExpiry(millisecondsPerUnit == 1 ? ExpiryUnit.Milliseconds : ExpiryUnit.Seconds, amount, out long expiryMs))
        {
            c.Writer.WriteError(millisecondsPerUnit == 1
                ? "ERR invalid expire time in 'psetex' command"
                : "ERR invalid expire time in 'setex' command");
            return;
        }

        c.Set(f[1], f[3], expiryMs);
        c.Writer.WriteOk();
    }

    public static void Incr(CommandContext c, CommandFrame f) => IncrementBy(c, f[1], 1);

    public static void Decr(CommandContext c, CommandFrame f) => IncrementBy(c, f[1], -1);

    public static void IncrBy(CommandContext c, CommandFrame f)
    {
        if (!Replies.TryParseLong(f[2], out long increment))
        {
            c.Writer.WriteError(Replies.NotInteger);
            return;
        }

        IncrementBy(c, f[1], increment);
    }

    public static void DecrBy(CommandContext c, CommandFrame f)
    {
        if (!Replies.TryParseLong(f[2], out long decrement) || decrement == long.MinValue)
        {
            c.Writer.WriteError(Replies.NotInteger);
            return;
        }

        IncrementBy(c, f[1], -decrement);
    }

    public static void Append(CommandContext c, CommandFrame f)
    {
        ReadOnlySpan<byte> value = f[2];
        fixed (byte* data = value)
        {
            var input = new RespInput(RespOperation.Append, c.Results, data, value.Length);
            c.Update(f[1], in input);
        }

        c.Writer.WriteInteger(c.Results.Number);
    }

    public static void StrLen(CommandContext c, CommandFrame f)
    {
        c.Read(f[1], RespOperation.Length);
        c.Writer.WriteInteger(c.Results.Found ? c.Results.Number : 0);
    }

    public static void GetDel(CommandContext c, CommandFrame f)
    {
        // The check writes nothing for a missing key; the removal itself decides, atomically, what this GETDEL got.
        c.Read(f[1], RespOperation.Exists);
        if (c.Results.Found)
        {
            c.Remove(f[1], take: true);
        }

        WriteValueOrNull(c);
    }

    private static void IncrementBy(CommandContext c, ReadOnlySpan<byte> key, long increment)
    {
        var input = new RespInput(RespOperation.IncrementBy, c.Results, number: increment);
        c.Update(key, in input);
        if (c.Results.NotInteger)
        {
            c.Writer.WriteError(Replies.NotInteger);
        }
        else if (c.Results.Overflow)
        {
            c.Writer.WriteError(Replies.Overflow);
        }
        else
        {
            c.Writer.WriteInteger(c.Results.Number);
        }
    }

    private static void WriteValueOrNull(CommandContext c)
    {
        if (c.Results.Found)
        {
            c.Writer.WriteBulk(c.Results.Value);
        }
        else
        {
            c.Writer.WriteNull();
        }
    }

    // A conditional SET that did not set: null, or with GET the value it found.
    private static void WriteSkipped(CommandContext c, bool get)
    {
        if (get)
        {
            WriteValueOrNull(c);
        }
        else
        {
            c.Writer.WriteNull();
        }
    }

    private enum ExpiryUnit
    {
        Seconds,
        Milliseconds,
        UnixSeconds,
        UnixMilliseconds,
    }

    private static ExpiryUnit? ExpiryOption(ReadOnlySpan<byte> option) =>
        CommandNames.Is(option, "EX"u8) ? ExpiryUnit.Seconds
        : CommandNames.Is(option, "PX"u8) ? ExpiryUnit.Milliseconds
        : CommandNames.Is(option, "EXAT"u8) ? ExpiryUnit.UnixSeconds
        : CommandNames.Is(option, "PXAT"u8) ? ExpiryUnit.UnixMilliseconds
        : null;

    /// <summary>An expiry option's amount as Unix milliseconds; false when not positive or out of range.</summary>
    private static bool TryExpiry(ExpiryUnit unit, long amount, out long expiryMs)
    {
        expiryMs = 0;
        const long maxMs = 253_402_300_799_999; // 9999-12-31, the last millisecond a DateTimeOffset holds.
        if (amount <= 0 || amount > maxMs)
        {
            return false;
        }

        expiryMs = unit switch
        {
            ExpiryUnit.Seconds => Replies.NowMs() + Math.Min(amount, maxMs / 1000) * 1000,
            ExpiryUnit.Milliseconds => Replies.NowMs() + amount,
            ExpiryUnit.UnixSeconds => Math.Min(amount, maxMs / 1000) * 1000,
            _ => amount,
        };
        return expiryMs <= maxMs;
    }
}
