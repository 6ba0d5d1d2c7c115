using HybridKV.Server.Storage;

namespace HybridKV.Server.Commands;

/// <summary>DEL (UNLINK), EXISTS, PERSIST, EXPIRE, PEXPIRE, TTL, PTTL, DBSIZE, SCAN.</summary>
internal static class KeyCommands
{
    public static void Del(CommandContext c, CommandFrame f)
    {
        long deleted = 0;
        for (int i = 1; i < f.Count; i++)
        {
            // A delete alone cannot tell whether the key held a value (the store appends a tombstone without reading
            // a record on the device), and DEL replies with how many did: the removal decides that atomically, so two
            // connections deleting one key count it once. The check before it writes nothing for a missing key.
            c.Read(f[i], RespOperation.Exists);
            if (c.Results.Found)
            {
                c.Remove(f[i], take: false);
                deleted += c.Results.Found ? 1 : 0;
            }
        }

        c.Writer.WriteInteger(deleted);
    }

    public static void Exists(CommandContext c, CommandFrame f)
    {
        long found = 0;
        for (int i = 1; i < f.Count; i++)
        {
            c.Read(f[i], RespOperation.Exists);
            found += c.Results.Found ? 1 : 0;
        }

        c.Writer.WriteInteger(found);
    }

    public static void Expire(CommandContext c, CommandFrame f) => SetExpiry(c, f, millisecondsPerUnit: 1000);

    public static void PExpire(CommandContext c, CommandFrame f) => SetExpiry(c, f, millisecondsPerUnit: 1);

    public static void Ttl(CommandContext c, CommandFrame f) => TimeToLive(c, f[1], millisecondsPerUnit: 1000);

    public static void PTtl(CommandContext c, CommandFrame f) => TimeToLive(c, f[1], millisecondsPerUnit: 1);

    /// <summary>PERSIST key: removes the expiry; 1 if the key had one.</summary>
    public static unsafe void Persist(CommandContext c, CommandFrame f)
    {
        ReadOnlySpan<byte> key = f[1];
        c.Read(key, RespOperation.Expiry);
        if (!c.Results.Found || c.Results.Number == ValueHeader.NoExpiry)
        {
            c.Writer.WriteInteger(0);
            return;
        }

        var input = new RespInput(RespOperation.SetExpiry, c.Results, header: ValueHeader.NoExpiry);
        c.Update(key, in input, Expiration.Never);
        c.Writer.WriteInteger(c.Results.Applied ? 1 : 0);
    }

    public static async ValueTask DbSizeAsync(CommandContext c, CancellationToken cancellationToken)
    {
        long count = await CountKeysAsync(c.Server.Store, cancellationToken).ConfigureAwait(false);
        c.Writer.WriteInteger(count);
    }

    /// <summary>
    /// SCAN cursor [MATCH pattern] [COUNT n] [TYPE string]. The cursor is a log address: the scan returns live keys whose
    /// newest record is at or after it, in log order. A key present for the whole iteration is returned at least once
    /// (an update moves it to the tail, where the scan finds it again); a key may be returned twice.
    /// </summary>
    public static async ValueTask ScanAsync(CommandContext c, byte[][] args, CancellationToken cancellationToken)
    {
        if (!Replies.TryParseLong(args[1], out long cursor) || cursor < 0)
        {
            c.Writer.WriteError("ERR invalid cursor");
            return;
        }

        byte[]? pattern = null;
        long count = 10;
        bool stringsOnly = true;
        for (int i = 2; i < args.Length; i++)
        {
            if (i + 1 >= args.Length)
            {
                c.Writer.WriteError(Replies.Syntax);
                return;
            }

            if (CommandNames.Is(args[i], "MATCH"u8))
            {
                pattern = args[++i];
            }
            else if (CommandNames.Is(args[i], "COUNT"u8))
            {
                if (!Replies.TryParseLong(args[++i], out count) || count < 1)
                {
                    c.Writer.WriteError(count < 1 ? Replies.Syntax : Replies.NotInteger);
                    return;
                }
            }
            else if (CommandNames.Is(args[i], "TYPE"u8))
            {
                stringsOnly = CommandNames.Is(args[++i], "STRING"u8);
            }
            else
            {
                c.Writer.WriteError(Replies.Syntax);
                return;
            }
        }

        var keys = new List<byte[]>();
        long next = 0;
        long examined = 0;
        if (stringsOnly)
        {
            await foreach (ScanRecord<VarBytes, VarBytes> record in c.Server.Store.ScanLiveAsync(cancellationToken)
                               .ConfigureAwait(false))
            {
                if (record.Address < cursor || !ValueHeader.IsLive(ValueHeader.Read(record.Value.AsReadOnlySpan())))
                {
                    continue;
                }

                // COUNT counts the keys examined, as in Redis, so that a rare MATCH does not scan everything at once.
                if (examined == count)
                {
                    next = record.Address;
                    break;
                }

                examined++;
                ReadOnlySpan<byte> key = record.Key.AsReadOnlySpan();
                if (pattern is null || GlobPattern.IsMatch(pattern, key))
                {
                    keys.Add(key.ToArray());
                }
            }
        }

        c.Writer.WriteArrayHeader(2);
        c.Writer.WriteBulk(next);
        c.Writer.WriteArrayHeader(keys.Count);
        foreach (byte[] key in keys)
        {
            c.Writer.WriteBulk(key);
        }
    }

    /// <summary>The number of live keys: a scan of the log (DBSIZE and INFO keyspace).</summary>
    public static async Task<long> CountKeysAsync(RespStore store, CancellationToken cancellationToken)
    {
        long count = 0;
        await foreach (ScanRecord<VarBytes, VarBytes> record in store.ScanLiveAsync(cancellationToken).ConfigureAwait(false))
        {
            if (ValueHeader.IsLive(ValueHeader.Read(record.Value.AsReadOnlySpan())))
            {
                count++;
            }
        }

        return count;
    }

    private static unsafe void SetExpiry(CommandContext c, CommandFrame f, long millisecondsPerUnit)
    {
        if (!Replies.TryParseLong(f[2], out long amount))
        {
            c.Writer.WriteError(Replies.NotInteger);
            return;
        }

        if (f.Count > 3)
        {
            c.Writer.WriteError("ERR EXPIRE options (NX, XX, GT, LT) are not supported");
            return;
        }

        ReadOnlySpan<byte> key = f[1];
        c.Read(key, RespOperation.Exists);
        if (!c.Results.Found)
        {
            c.Writer.WriteInteger(0);
            return;
        }

        if (amount <= 0)
        {
            // An expiry now or in the past deletes the key, as in Redis.
            c.Remove(key, take: false);
            c.Writer.WriteInteger(c.Results.Found ? 1 : 0);
            return;
        }

        const long maxMs = 253_402_300_799_999;
        long now = Replies.NowMs();
        if (amount > (maxMs - now) / millisecondsPerUnit)
        {
            c.Writer.WriteError(millisecondsPerUnit == 1
                ? "ERR invalid expire time in 'pexpire' command"
                : "ERR invalid expire time in 'expire' command");
            return;
        }

        long expiryMs = now + (amount * millisecondsPerUnit);
        var input = new RespInput(RespOperation.SetExpiry, c.Results, header: expiryMs);
        c.Update(key, in input, CommandContext.ExpirationAt(expiryMs));
        c.Writer.WriteInteger(c.Results.Applied ? 1 : 0);
    }

    private static void TimeToLive(CommandContext c, ReadOnlySpan<byte> key, long millisecondsPerUnit)
    {
        c.Read(key, RespOperation.Expiry);
        if (!c.Results.Found)
        {
            c.Writer.WriteInteger(-2);
            return;
        }

        if (c.Results.Number == ValueHeader.NoExpiry)
        {
            c.Writer.WriteInteger(-1);
            return;
        }

        long remaining = Math.Max(0, c.Results.Number - Replies.NowMs());
        c.Writer.WriteInteger(millisecondsPerUnit == 1 ? remaining : (remaining + 500) / 1000);
    }
}
