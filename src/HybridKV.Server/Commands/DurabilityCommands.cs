using System.Text;
using HybridKV.Checkpoints;

namespace HybridKV.Server.Commands;

/// <summary>
/// CPR over the wire: HKV.SESSION (the connection's session id), HKV.COMMIT (wait until the connection's writes are
/// durable), HKV.DURABLE (reply to writes only once durable), HKV.CONTINUE (take a session over after a restart and
/// learn its commit point).
/// </summary>
internal static class DurabilityCommands
{
    /// <summary>HKV.SESSION: the id under which the connection's writes are committed.</summary>
    public static void Session(CommandContext c) => c.Writer.WriteBulk(c.Session.Id.ToString("D"));

    /// <summary>HKV.DURABLE [ON | OFF]: with no argument, whether it is on (1) or off (0).</summary>
    public static void Durable(CommandContext c, CommandFrame f)
    {
        if (f.Count == 1)
        {
            c.Writer.WriteInteger(c.Durable ? 1 : 0);
        }
        else if (CommandNames.Is(f[1], "ON"u8))
        {
            c.Durable = true;
            c.Writer.WriteOk();
        }
        else if (CommandNames.Is(f[1], "OFF"u8))
        {
            c.Durable = false;
            c.Writer.WriteOk();
        }
        else
        {
            c.Writer.WriteError(Replies.Syntax);
        }
    }

    /// <summary>HKV.COMMIT: replies with the serial number of the connection's last write once it is durable.</summary>
    public static async ValueTask CommitAsync(CommandContext c, CancellationToken cancellationToken)
    {
        try
        {
            long serialNo = await WaitDurableAsync(c, cancellationToken).ConfigureAwait(false);
            c.Writer.WriteInteger(serialNo);
        }
        catch (Exception error) when (error is not OperationCanceledException)
        {
            c.Writer.WriteError($"ERR commit failed ({error.GetType().Name}): the writes are not known to be durable");
        }
    }

    /// <summary>
    /// HKV.CONTINUE id: the connection takes over the session <paramref name="args"/>[1] names (one a connection held
    /// before a restart) and replies with its commit point: [until serial number, [excluded serial numbers]]. Every
    /// write of that session numbered up to it (except the excluded) survived; none after it did.
    /// </summary>
    public static ValueTask ContinueAsync(CommandContext c, byte[][] args)
    {
        if (!Guid.TryParse(Encoding.ASCII.GetString(args[1]), out Guid id))
        {
            c.Writer.WriteError("ERR invalid session id: expected a GUID, as HKV.SESSION returns");
            return ValueTask.CompletedTask;
        }

        RespSession session;
        CommitPoint point;
        try
        {
            session = c.Server.Store.ContinueSession(id, out point);
        }
        catch (ArgumentException)
        {
            c.Writer.WriteError("ERR that session is open on another connection");
            return ValueTask.CompletedTask;
        }
        catch (InvalidOperationException)
        {
            c.Writer.WriteError("ERR too many sessions are open");
            return ValueTask.CompletedTask;
        }

        c.ReplaceSession(session);
        Hosting.ServerLog.SessionContinued(c.Server.Logger, c.ClientId, id, point.UntilSerialNo);
        c.Writer.WriteArrayHeader(2);
        c.Writer.WriteInteger(point.UntilSerialNo);
        c.Writer.WriteArrayHeader(point.ExcludedSerialNos.Count);
        foreach (long excluded in point.ExcludedSerialNos)
        {
            c.Writer.WriteInteger(excluded);
        }

        return ValueTask.CompletedTask;
    }

    /// <summary>
    /// Waits until every write the connection made is durable, through the hosting package's commit scheduler, so
    /// that connections waiting together share one checkpoint. Returns the serial number of the last write.
    /// </summary>
    public static async ValueTask<long> WaitDurableAsync(CommandContext c, CancellationToken cancellationToken)
    {
        long serialNo = c.LastWriteSerialNo;
        if (serialNo > c.DurableSerialNo)
        {
            RespSession session = c.Session;
            Task committed = session.WaitForCommitAsync(serialNo, CancellationToken.None);
            await c.Server.Commits.WaitDurableAsync(committed, cancellationToken).ConfigureAwait(false);
            c.DurableSerialNo = serialNo;
        }

        return serialNo;
    }
}
