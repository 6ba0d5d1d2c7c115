using System.Security.Cryptography;
using System.Text;

namespace HybridKV.Server.Commands;

/// <summary>PING, ECHO, HELLO, AUTH, QUIT, SELECT, CLIENT.</summary>
internal static class ConnectionCommands
{
    /// <summary>The Redis version the server answers to (HELLO, INFO): clients pick their commands by it.</summary>
    public const string CompatibleRedisVersion = "7.2.0";

    public static void Ping(CommandContext c, CommandFrame f)
    {
        if (f.Count > 1)
        {
            c.Writer.WriteBulk(f[1]);
        }
        else
        {
            c.Writer.WriteRaw(Replies.Pong);
        }
    }

    public static void Echo(CommandContext c, CommandFrame f) => c.Writer.WriteBulk(f[1]);

    public static CommandOutcome Quit(CommandContext c)
    {
        c.Writer.WriteOk();
        return CommandOutcome.Close;
    }

    public static void Select(CommandContext c, CommandFrame f)
    {
        if (f[1].SequenceEqual("0"u8))
        {
            c.Writer.WriteOk();
        }
        else
        {
            c.Writer.WriteError("ERR DB index is out of range");
        }
    }

    /// <summary>AUTH [username] password: the only user is <c>default</c>.</summary>
    public static void Auth(CommandContext c, CommandFrame f)
    {
        if (f.Count > 3)
        {
            c.Writer.WriteError(Replies.Syntax);
            return;
        }

        if (c.Server.Options.RequirePass is null)
        {
            c.Writer.WriteError("ERR AUTH <password> called without any password configured for the default user. " +
                                "Are you sure your configuration is correct?");
            return;
        }

        if (TryAuthenticate(c, f.Count == 3 ? f[1] : "default"u8, f[f.Count - 1]))
        {
            c.Writer.WriteOk();
        }
        else
        {
            c.Writer.WriteError("WRONGPASS invalid username-password pair or user is disabled.");
        }
    }

    /// <summary>HELLO [protover [AUTH username password] [SETNAME clientname]].</summary>
    public static void Hello(CommandContext c, CommandFrame f)
    {
        int protocol = c.Writer.Protocol;
        if (f.Count > 1)
        {
            if (!Replies.TryParseLong(f[1], out long requested) || requested is < 2 or > 3)
            {
                c.Writer.WriteError("NOPROTO unsupported protocol version");
                return;
            }

            protocol = (int)requested;
        }

        string? name = c.ClientName;
        for (int i = 2; i < f.Count; i++)
        {
            if (CommandNames.Is(f[i], "AUTH"u8) && i + 2 < f.Count)
            {
                if (c.Server.Options.RequirePass is null || !TryAuthenticate(c, f[i + 1], f[i + 2]))
                {
                    c.Writer.WriteError("WRONGPASS invalid username-password pair or user is disabled.");
                    return;
                }

                i += 2;
            }
            else if (CommandNames.Is(f[i], "SETNAME"u8) && i + 1 < f.Count)
            {
                name = Encoding.UTF8.GetString(f[++i]);
            }
            else
            {
                c.Writer.WriteError(Replies.Syntax);
                return;
            }
        }

        if (!c.Authenticated)
        {
            c.Writer.WriteError("NOAUTH HELLO must be called with the client already authenticated, otherwise the " +
                                "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and " +
                                "select the RESP protocol version at the same time");
            return;
        }

        c.ClientName = name;
        c.Writer.Protocol = protocol;
        c.Writer.WriteMapHeader(7);
        c.Writer.WriteBulk("server"u8);
        c.Writer.WriteBulk("redis"u8);
        c.Writer.WriteBulk("version"u8);
        c.Writer.WriteBulk(CompatibleRedisVersion);
        c.Writer.WriteBulk("proto"u8);
        c.Writer.WriteInteger(protocol);
        c.Writer.WriteBulk("id"u8);
        c.Writer.WriteInteger(c.ClientId);
        c.Writer.WriteBulk("mode"u8);
        c.Writer.WriteBulk("standalone"u8);
        c.Writer.WriteBulk("role"u8);
        c.Writer.WriteBulk("master"u8);
        c.Writer.WriteBulk("modules"u8);
        c.Writer.WriteArrayHeader(0);
    }

    /// <summary>CLIENT SETNAME | GETNAME | ID | SETINFO.</summary>
    public static void Client(CommandContext c, CommandFrame f)
    {
        ReadOnlySpan<byte> sub = f[1];
        if (CommandNames.Is(sub, "ID"u8) && f.Count == 2)
        {
            c.Writer.WriteInteger(c.ClientId);
        }
        else if (CommandNames.Is(sub, "GETNAME"u8) && f.Count == 2)
        {
            if (c.ClientName is null)
            {
                c.Writer.WriteNull();
            }
            else
            {
                c.Writer.WriteBulk(c.ClientName);
            }
        }
        else if (CommandNames.Is(sub, "SETNAME"u8) && f.Count == 3)
        {
            if (f[2].IndexOfAny((byte)' ', (byte)'\n', (byte)'\r') >= 0)
            {
                c.Writer.WriteError("ERR Client names cannot contain spaces, newlines or special characters.");
                return;
            }

            c.ClientName = f[2].IsEmpty ? null : Encoding.UTF8.GetString(f[2]);
            c.Writer.WriteOk();
        }
        else if (CommandNames.Is(sub, "SETINFO"u8) && f.Count == 4)
        {
            // Client libraries announce themselves; nothing here depends on it.
            c.Writer.WriteOk();
        }
        else
        {
            c.Writer.WriteError(
                $"ERR unknown subcommand or wrong number of arguments for '{Encoding.UTF8.GetString(sub)}'. Try CLIENT HELP.");
        }
    }

    private static bool TryAuthenticate(CommandContext c, ReadOnlySpan<byte> user, ReadOnlySpan<byte> password)
    {
        // Compared in constant time, and never logged or echoed.
        byte[] expected = c.Server.Options.RequirePassBytes;
        bool matches = CommandNames.Is(user, "DEFAULT"u8) & CryptographicOperations.FixedTimeEquals(expected, password);
        if (matches)
        {
            c.Authenticated = true;
        }
        else
        {
            Hosting.ServerLog.AuthenticationFailed(c.Server.Logger, c.ClientId);
        }

        return matches;
    }
}
