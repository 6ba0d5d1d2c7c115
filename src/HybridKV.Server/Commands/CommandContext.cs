using System.Runtime.CompilerServices;
using HybridKV.Server.Protocol;
using HybridKV.Server.Storage;
using HybridKV.Sessions;

namespace HybridKV.Server.Commands;

/// <summary>
/// One connection as its commands see it: its session (the CPR session the connection's writes are numbered in), its
/// reply writer, its settings (protocol, name, authentication, durable mode), and the store operations with their
/// pending part completed before they return, so that each command's results are final when it replies.
/// </summary>
internal sealed unsafe class CommandContext : IDisposable
{
    // Where a SET builds header + value before the upsert copies it into the log; grows to the largest value set.
    private byte[] _scratch = new byte[256];

    // Open while a batch of commands runs: one epoch protection for the batch instead of one per operation.
    private ProtectedScope _scope;
    private bool _protected;

    public CommandContext(ServerContext server, RespWriter writer, RespSession session)
    {
        Server = server;
        Writer = writer;
        Session = session;
        ClientId = server.NextClientId();
        Authenticated = server.Options.RequirePass is null;
        Durable = server.Options.DurableWrites;
    }

    /// <summary>What the connections share.</summary>
    public ServerContext Server { get; }

    /// <summary>Where replies go.</summary>
    public RespWriter Writer { get; }

    /// <summary>The connection's session (replaced by HKV.CONTINUE).</summary>
    public RespSession Session { get; private set; }

    /// <summary>Where the store's callbacks put what a command replies.</summary>
    public CommandResults Results { get; } = new();

    /// <summary>CLIENT ID.</summary>
    public long ClientId { get; }

    /// <summary>CLIENT SETNAME's name, or null.</summary>
    public string? ClientName { get; set; }

    /// <summary>Whether the connection may run commands (always, without a password).</summary>
    public bool Authenticated { get; set; }

    /// <summary>Whether replies wait until the connection's writes are durable.</summary>
    public bool Durable { get; set; }

    /// <summary>The last write's serial number known durable: writes after it wait in durable mode.</summary>
    public long DurableSerialNo { get; set; }

    /// <summary>The serial number of the connection's last write (reads take serial numbers too, but need no commit).</summary>
    public long LastWriteSerialNo { get; private set; }

    /// <summary>Enters epoch protection for the commands that follow, if not yet.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Protect()
    {
        if (!_protected)
        {
            _scope = Session.BeginProtectedScope();
            _protected = true;
        }
    }

    /// <summary>Leaves epoch protection: before the connection awaits anything.</summary>
    public void Unprotect()
    {
        if (_protected)
        {
            _protected = false;
            _scope.Dispose();
        }
    }

    /// <summary>Replaces the session (HKV.CONTINUE); the old one is disposed.</summary>
    public void ReplaceSession(RespSession session)
    {
        Unprotect();
        RespSession old = Session;
        Session = session;
        DurableSerialNo = LastWriteSerialNo = session.LastSerialNo;
        old.Dispose();
    }

    /// <summary>Reads <paramref name="key"/>; the results say what was found.</summary>
    public void Read(ReadOnlySpan<byte> key, RespOperation operation) => ReadOrDefer(key, operation, defer: false);

    /// <summary>
    /// Whether a read that must wait for the device is left pending rather than waited for on this thread, for the
    /// commands that can finish later (<see cref="CommandOutcome.Deferred"/>): set while the store's log is larger than
    /// its memory.
    /// </summary>
    public bool DeferDeviceReads { get; set; }

    /// <summary>
    /// Reads <paramref name="key"/> as <see cref="Read"/> does, except that with <see cref="DeferDeviceReads"/> a read
    /// that must wait for the device is left pending: false, and the results are filled once the session's pending
    /// operations complete.
    /// </summary>
    public bool ReadOrDefer(ReadOnlySpan<byte> key, RespOperation operation) =>
        ReadOrDefer(key, operation, DeferDeviceReads);

    private bool ReadOrDefer(ReadOnlySpan<byte> key, RespOperation operation, bool defer)
    {
        Results.Reset();
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            var input = new RespInput(operation, Results);
            Empty output = default;
            if (Session.Read(in keyArgument, in input, ref output, default) == Status.Pending)
            {
                if (defer)
                {
                    return false;
                }

                Complete();
            }
        }

        return true;
    }

    /// <summary>Read-modify-write of <paramref name="key"/>, the value keeping its expiry.</summary>
    public void Update(ReadOnlySpan<byte> key, in RespInput input)
    {
        Results.Reset();
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            if (Session.RMW(in keyArgument, in input) == Status.Pending)
            {
                Complete();
            }

            LastWriteSerialNo = Session.LastSerialNo;
        }
    }

    /// <summary>Read-modify-write of <paramref name="key"/> whose value then expires as <paramref name="expiration"/> says.</summary>
    public void Update(ReadOnlySpan<byte> key, in RespInput input, Expiration expiration)
    {
        Results.Reset();
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            if (Session.RMW(in keyArgument, in input, expiration) == Status.Pending)
            {
                Complete();
            }

            LastWriteSerialNo = Session.LastSerialNo;
        }
    }

    /// <summary>Sets <paramref name="key"/> to <paramref name="value"/> with the expiry <paramref name="expiryMs"/> (0: none).</summary>
    public void Set(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value, long expiryMs)
    {
        int length = ValueHeader.Size + value.Length;
        if (_scratch.Length < length)
        {
            _scratch = new byte[Math.Max(length, _scratch.Length * 2)];
        }

        ValueHeader.Write(_scratch, expiryMs);
        value.CopyTo(_scratch.AsSpan(ValueHeader.Size));
        fixed (byte* keyBytes = key)
        fixed (byte* valueBytes = _scratch)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            var valueArgument = new VarBytes(valueBytes, length);
            Status status = expiryMs > 0
                ? Session.Upsert(in keyArgument, in valueArgument, ExpirationAt(expiryMs))
                : Session.Upsert(in keyArgument, in valueArgument);
            if (status == Status.Pending)
            {
                Complete();
            }

            LastWriteSerialNo = Session.LastSerialNo;
        }
    }

    /// <summary>
    /// Removes <paramref name="key"/> in one read-modify-write, so that of two connections removing it only one finds
    /// its value: the value becomes a placeholder whose record has already expired (reads and scans skip it, compaction
    /// drops it as it would a tombstone). The results say whether there was a live value and, with
    /// <paramref name="take"/>, hold it.
    /// </summary>
    public void Remove(ReadOnlySpan<byte> key, bool take)
    {
        var input = new RespInput(take ? RespOperation.TakeAndRemove : RespOperation.Remove, Results);
        Update(key, in input, AlreadyExpired);
    }

    private static readonly Expiration AlreadyExpired = Expiration.At(DateTimeOffset.UnixEpoch);

    /// <summary>The expiry of a record written at <paramref name="expiryMs"/> (Unix milliseconds).</summary>
    public static Expiration ExpirationAt(long expiryMs) =>
        Expiration.At(DateTimeOffset.FromUnixTimeMilliseconds(Math.Min(expiryMs, DateTimeOffset.MaxValue.ToUnixTimeMilliseconds())));

    // An operation went pending (its record is on the device, or it waits for a checkpoint phase): the command's reply
    // needs its result, and the argument bytes it points at are valid only until the command returns.
    private void Complete() => Session.CompletePending(wait: true);

    /// <inheritdoc/>
    public void Dispose()
    {
        Unprotect();
        Session.Dispose();
    }
}
