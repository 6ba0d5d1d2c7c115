using System.Text;

namespace HybridKV.Server.Commands;

/// <summary>
/// The one place a command is looked up, checked (authentication, number of arguments) and run. Most commands run
/// synchronously inside the connection's batch; the few that wait (for a checkpoint, a scan) run asynchronously
/// outside it: <see cref="RunsAsynchronously"/> says which.
/// </summary>
internal static class CommandDispatcher
{
    /// <summary>Whether <paramref name="command"/> runs through <see cref="ExecuteAsync"/> rather than <see cref="Execute"/>.</summary>
    public static bool RunsAsynchronously(RespCommand command) => command is RespCommand.Info or RespCommand.DbSize
        or RespCommand.Scan or RespCommand.Save or RespCommand.HkvCommit or RespCommand.HkvContinue;

    /// <summary>Checks what every command needs before it runs; false when an error reply was written instead.</summary>
    public static bool CanRun(CommandContext c, RespCommand command, CommandFrame f)
    {
        if (command == RespCommand.Unknown)
        {
            WriteUnknown(c, f);
            return false;
        }

        if (!c.Authenticated && command is not (RespCommand.Auth or RespCommand.Hello or RespCommand.Quit))
        {
            c.Writer.WriteError(Replies.NoAuth);
            return false;
        }

        (int min, int max) = Arity(command);
        if (f.Count < min || (max > 0 && f.Count > max) ||
            (command == RespCommand.MSet && f.Count % 2 == 0))
        {
            c.Writer.WriteError(Replies.WrongArity(f[0]));
            return false;
        }

        return true;
    }

    /// <summary>Runs a synchronous command (<see cref="CanRun"/> passed).</summary>
    public static CommandOutcome Execute(CommandContext c, RespCommand command, CommandFrame f)
    {
        switch (command)
        {
            case RespCommand.Get: return StringCommands.Get(c, f);
            case RespCommand.Set: StringCommands.Set(c, f); break;
            case RespCommand.Incr: StringCommands.Incr(c, f); break;
            case RespCommand.IncrBy: StringCommands.IncrBy(c, f); break;
            case RespCommand.Decr: StringCommands.Decr(c, f); break;
            case RespCommand.DecrBy: StringCommands.DecrBy(c, f); break;
            case RespCommand.MGet: StringCommands.MGet(c, f); break;
            case RespCommand.MSet: StringCommands.MSet(c, f); break;
            case RespCommand.Append: StringCommands.Append(c, f); break;
            case RespCommand.StrLen: StringCommands.StrLen(c, f); break;
            case RespCommand.GetDel: StringCommands.GetDel(c, f); break;
            case RespCommand.SetNx: StringCommands.SetNx(c, f); break;
            case RespCommand.SetEx: StringCommands.SetEx(c, f, millisecondsPerUnit: 1000); break;
            case RespCommand.PSetEx: StringCommands.SetEx(c, f, millisecondsPerUnit: 1); break;
            case RespCommand.Del or RespCommand.Unlink: KeyCommands.Del(c, f); break;
            case RespCommand.Exists: KeyCommands.Exists(c, f); break;
            case RespCommand.Expire: KeyCommands.Expire(c, f); break;
            case RespCommand.PExpire: KeyCommands.PExpire(c, f); break;
            case RespCommand.Ttl: KeyCommands.Ttl(c, f); break;
            case RespCommand.PTtl: KeyCommands.PTtl(c, f); break;
            case RespCommand.Persist: KeyCommands.Persist(c, f); break;
            case RespCommand.Ping: ConnectionCommands.Ping(c, f); break;
            case RespCommand.Echo: ConnectionCommands.Echo(c, f); break;
            case RespCommand.Hello: ConnectionCommands.Hello(c, f); break;
            case RespCommand.Auth: ConnectionCommands.Auth(c, f); break;
            case RespCommand.Quit: return ConnectionCommands.Quit(c);
            case RespCommand.Select: ConnectionCommands.Select(c, f); break;
            case RespCommand.Client: ConnectionCommands.Client(c, f); break;
            case RespCommand.Command: ServerCommands.Command(c, f); break;
            case RespCommand.Config: ServerCommands.Config(c, f); break;
            case RespCommand.BgSave: ServerCommands.BgSave(c); break;
            case RespCommand.LastSave: ServerCommands.LastSave(c); break;
            case RespCommand.HkvSession: DurabilityCommands.Session(c); break;
            case RespCommand.HkvDurable: DurabilityCommands.Durable(c, f); break;
            default: throw new InvalidOperationException($"{command} runs asynchronously.");
        }

        return CommandOutcome.Done;
    }

    /// <summary>Writes the reply of a command that returned <see cref="CommandOutcome.Deferred"/>, once the session's
    /// pending operations have completed.</summary>
    public static void FinishDeferred(CommandContext c, RespCommand command)
    {
        switch (command)
        {
            case RespCommand.Get: StringCommands.FinishGet(c); break;
            default: throw new InvalidOperationException($"{command} is never deferred.");
        }
    }

    /// <summary>Runs an asynchronous command (<see cref="CanRun"/> passed) on its copied arguments.</summary>
    public static ValueTask ExecuteAsync(CommandContext c, RespCommand command, byte[][] args,
        CancellationToken cancellationToken) => command switch
    {
        RespCommand.Info => ServerCommands.InfoAsync(c, args, cancellationToken),
        RespCommand.DbSize => KeyCommands.DbSizeAsync(c, cancellationToken),
        RespCommand.Scan => KeyCommands.ScanAsync(c, args, cancellationToken),
        RespCommand.Save => ServerCommands.SaveAsync(c, cancellationToken),
        RespCommand.HkvCommit => DurabilityCommands.CommitAsync(c, cancellationToken),
        RespCommand.HkvContinue => DurabilityCommands.ContinueAsync(c, args),
        _ => throw new InvalidOperationException($"{command} runs synchronously."),
    };

    /// <summary>The fewest and most arguments (the name included; 0 for no maximum).</summary>
    private static (int Min, int Max) Arity(RespCommand command) => command switch
    {
        RespCommand.Get or RespCommand.Incr or RespCommand.Decr or RespCommand.StrLen or RespCommand.GetDel
            or RespCommand.Ttl or RespCommand.PTtl or RespCommand.Persist => (2, 2),
        RespCommand.SetNx => (3, 3),
        RespCommand.SetEx or RespCommand.PSetEx => (4, 4),
        RespCommand.Set => (3, 0),
        RespCommand.IncrBy or RespCommand.DecrBy or RespCommand.Append => (3, 3),
        RespCommand.Expire or RespCommand.PExpire => (3, 4),
        RespCommand.MGet or RespCommand.Del or RespCommand.Unlink or RespCommand.Exists => (2, 0),
        RespCommand.MSet => (3, 0),
        RespCommand.Scan => (2, 0),
        RespCommand.Ping => (1, 2),
        RespCommand.Echo or RespCommand.Select => (2, 2),
        RespCommand.Auth => (2, 3),
        RespCommand.Client or RespCommand.Config => (2, 0),
        RespCommand.HkvContinue => (2, 2),
        RespCommand.HkvDurable => (1, 2),
        RespCommand.DbSize or RespCommand.Save or RespCommand.BgSave or RespCommand.LastSave or RespCommand.Quit
            or RespCommand.HkvCommit or RespCommand.HkvSession => (1, 1),
        _ => (1, 0),
    };

    private static void WriteUnknown(CommandContext c, CommandFrame f)
    {
        // Redis's text, with the arguments cut short: they come from the client, and end up in its logs, not ours.
        var text = new StringBuilder("ERR unknown command '");
        text.Append(Shorten(f[0])).Append("', with args beginning with: ");
        for (int i = 1; i < f.Count && i < 8; i++)
        {
            text.Append('\'').Append(Shorten(f[i])).Append("' ");
        }

        c.Writer.WriteError(text.ToString());
    }

    private static string Shorten(ReadOnlySpan<byte> argument)
    {
        string text = Encoding.UTF8.GetString(argument[..Math.Min(argument.Length, 128)]);
        return text.Replace('\r', ' ').Replace('\n', ' ');
    }
}
