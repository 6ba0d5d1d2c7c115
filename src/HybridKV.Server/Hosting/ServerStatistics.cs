namespace HybridKV.Server.Hosting;

/// <summary>The server's running totals (INFO), added to once per batch of commands, not per command.</summary>
internal sealed class ServerStatistics
{
    private long _connections;
    private long _connectionsAccepted;
    private long _connectionsRejected;
    private long _commands;
    private long _bytesReceived;
    private long _bytesSent;

    public long Connections => Volatile.Read(ref _connections);

    public long ConnectionsAccepted => Volatile.Read(ref _connectionsAccepted);

    public long ConnectionsRejected => Volatile.Read(ref _connectionsRejected);

    public long Commands => Volatile.Read(ref _commands);

    public long BytesReceived => Volatile.Read(ref _bytesReceived);

    public long BytesSent => Volatile.Read(ref _bytesSent);

    /// <summary>Counts a connection in, unless <paramref name="max"/> are open already.</summary>
    public bool TryOpen(int max)
    {
        if (Interlocked.Increment(ref _connections) > max)
        {
            Interlocked.Decrement(ref _connections);
            Interlocked.Increment(ref _connectionsRejected);
            return false;
        }

        Interlocked.Increment(ref _connectionsAccepted);
        return true;
    }

    public void Closed() => Interlocked.Decrement(ref _connections);

    public void AddCommands(long count) => Interlocked.Add(ref _commands, count);

    public void AddReceived(long bytes) => Interlocked.Add(ref _bytesReceived, bytes);

    public void AddSent(long bytes) => Interlocked.Add(ref _bytesSent, bytes);
}
