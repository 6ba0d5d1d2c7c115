using System.Text;

namespace HybridKV.Server.Commands;

/// <summary>Finds a command by its name, case-insensitively, without allocating.</summary>
internal static class CommandNames
{
    // The longest name the server knows; a longer one is unknown without looking.
    private const int MaxNameLength = 12;

    /// <summary>The command named <paramref name="name"/>, or <see cref="RespCommand.Unknown"/>.</summary>
    public static RespCommand Find(ReadOnlySpan<byte> name)
    {
        if (name.Length is 0 or > MaxNameLength)
        {
            return RespCommand.Unknown;
        }

        Span<byte> upper = stackalloc byte[MaxNameLength];
        for (int i = 0; i < name.Length; i++)
        {
            byte b = name[i];
            upper[i] = b is >= (byte)'a' and <= (byte)'z' ? (byte)(b - 32) : b;
        }

        upper = upper[..name.Length];
        // Grouped by length, the benchmark's commands first in each group.
        switch (upper.Length)
        {
            case 3:
                if (upper.SequenceEqual("GET"u8)) return RespCommand.Get;
                if (upper.SequenceEqual("SET"u8)) return RespCommand.Set;
                if (upper.SequenceEqual("DEL"u8)) return RespCommand.Del;
                if (upper.SequenceEqual("TTL"u8)) return RespCommand.Ttl;
                break;
            case 4:
                if (upper.SequenceEqual("INCR"u8)) return RespCommand.Incr;
                if (upper.SequenceEqual("DECR"u8)) return RespCommand.Decr;
                if (upper.SequenceEqual("MGET"u8)) return RespCommand.MGet;
                if (upper.SequenceEqual("MSET"u8)) return RespCommand.MSet;
                if (upper.SequenceEqual("PING"u8)) return RespCommand.Ping;
                if (upper.SequenceEqual("ECHO"u8)) return RespCommand.Echo;
                if (upper.SequenceEqual("PTTL"u8)) return RespCommand.PTtl;
                if (upper.SequenceEqual("SCAN"u8)) return RespCommand.Scan;
                if (upper.SequenceEqual("AUTH"u8)) return RespCommand.Auth;
                if (upper.SequenceEqual("QUIT"u8)) return RespCommand.Quit;
                if (upper.SequenceEqual("INFO"u8)) return RespCommand.Info;
                if (upper.SequenceEqual("SAVE"u8)) return RespCommand.Save;
                break;
            case 5:
                if (upper.SequenceEqual("HELLO"u8)) return RespCommand.Hello;
                if (upper.SequenceEqual("SETNX"u8)) return RespCommand.SetNx;
                if (upper.SequenceEqual("SETEX"u8)) return RespCommand.SetEx;
                break;
            case 6:
                if (upper.SequenceEqual("INCRBY"u8)) return RespCommand.IncrBy;
                if (upper.SequenceEqual("DECRBY"u8)) return RespCommand.DecrBy;
                if (upper.SequenceEqual("APPEND"u8)) return RespCommand.Append;
                if (upper.SequenceEqual("STRLEN"u8)) return RespCommand.StrLen;
                if (upper.SequenceEqual("GETDEL"u8)) return RespCommand.GetDel;
                if (upper.SequenceEqual("EXISTS"u8)) return RespCommand.Exists;
                if (upper.SequenceEqual("EXPIRE"u8)) return RespCommand.Expire;
                if (upper.SequenceEqual("DBSIZE"u8)) return RespCommand.DbSize;
                if (upper.SequenceEqual("SELECT"u8)) return RespCommand.Select;
                if (upper.SequenceEqual("CLIENT"u8)) return RespCommand.Client;
                if (upper.SequenceEqual("BGSAVE"u8)) return RespCommand.BgSave;
                if (upper.SequenceEqual("CONFIG"u8)) return RespCommand.Config;
                if (upper.SequenceEqual("PSETEX"u8)) return RespCommand.PSetEx;
                if (upper.SequenceEqual("UNLINK"u8)) return RespCommand.Unlink;
                break;
            case 7:
                if (upper.SequenceEqual("PEXPIRE"u8)) return RespCommand.PExpire;
                if (upper.SequenceEqual("COMMAND"u8)) return RespCommand.Command;
                if (upper.SequenceEqual("PERSIST"u8)) return RespCommand.Persist;
                break;
            case 8:
                if (upper.SequenceEqual("LASTSAVE"u8)) return RespCommand.LastSave;
                break;
            case 10:
                if (upper.SequenceEqual("HKV.COMMIT"u8)) return RespCommand.HkvCommit;
                break;
            case 11:
                if (upper.SequenceEqual("HKV.SESSION"u8)) return RespCommand.HkvSession;
                if (upper.SequenceEqual("HKV.DURABLE"u8)) return RespCommand.HkvDurable;
                break;
            case 12:
                if (upper.SequenceEqual("HKV.CONTINUE"u8)) return RespCommand.HkvContinue;
                break;
        }

        return RespCommand.Unknown;
    }

    /// <summary>Whether <paramref name="argument"/> equals the upper-case ASCII <paramref name="upper"/>, ignoring case.</summary>
    public static bool Is(ReadOnlySpan<byte> argument, ReadOnlySpan<byte> upper) =>
        Ascii.EqualsIgnoreCase(argument, upper);
}
