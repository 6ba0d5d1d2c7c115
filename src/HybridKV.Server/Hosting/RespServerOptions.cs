using System.Text;

namespace HybridKV.Server.Hosting;

/// <summary>
/// Where the RESP server listens and what it allows. Bound from configuration (by default the section
/// <c>HybridKV:Server</c>) and validated when the host starts; the store's own options stay in <c>HybridKV</c>.
/// </summary>
public sealed class RespServerOptions
{
    /// <summary>The configuration section bound by default.</summary>
    public const string DefaultSectionName = "HybridKV:Server";

    private string? _requirePass;
    private byte[] _requirePassBytes = [];

    /// <summary>
    /// The address to listen on. Default <c>127.0.0.1</c> (loopback only): listening on other interfaces is a choice
    /// to make together with <see cref="RequirePass"/> and TLS.
    /// </summary>
    public string BindAddress { get; set; } = "127.0.0.1";

    /// <summary>The TCP port, from 0 (any free port: the bound one is logged and in <c>INFO server</c>) to 65535. Default 6379.</summary>
    public int Port { get; set; } = 6379;

    /// <summary>The most connections at once; one more is told <c>-ERR max number of clients reached</c> and closed. Default 1000.</summary>
    public int MaxConnections { get; set; } = 1000;

    /// <summary>The longest argument (key or value) a request may carry, in bytes. Default 512 KiB; a key and value
    /// together must also fit in one of the store's log pages.</summary>
    public int MaxBulkLength { get; set; } = 512 * 1024;

    /// <summary>The most arguments a command may have (its name included). Default 65,536.</summary>
    public int MaxArguments { get; set; } = 65_536;

    /// <summary>The most bytes one request may take while it is still arriving. Default 64 MiB.</summary>
    public long MaxRequestBytes { get; set; } = 64L << 20;

    /// <summary>
    /// How many reply bytes a connection buffers before it stops running commands and waits for the client to read
    /// them. Default 1 MiB.
    /// </summary>
    public long MaxPendingOutputBytes { get; set; } = 1L << 20;

    /// <summary>
    /// How many threads serve plain connections on Linux (the server's epoll loops: each receives, runs the commands
    /// and sends for its share of the connections), from 0 to <see cref="MaxIoThreads"/>. 0 (the default): three
    /// quarters of the processors, at least one, leaving the rest to the kernel's network processing and to what else
    /// runs on the machine, as Redis advises for its own I/O threads. TLS connections and other systems use the thread
    /// pool instead.
    /// </summary>
    public int IoThreads { get; set; }

    /// <summary>The largest <see cref="IoThreads"/>.</summary>
    public const int MaxIoThreads = 256;

    /// <summary>
    /// How long an epoll loop keeps polling its sockets, once it has handled what arrived, before it sleeps until more
    /// does, in microseconds, from 0 (sleep at once) to <see cref="MaxBusyPollMicroseconds"/>. Default 50. With one
    /// request per round trip (no pipelining), the next request usually arrives within that time, and a loop that had
    /// gone to sleep took longer to wake (the processor it ran on had gone idle) than to serve it; polling costs some
    /// processor time under load (about a fifth more per request at one request per round trip) and at most this long
    /// after each wake-up when traffic is light.
    /// </summary>
    public int BusyPollMicroseconds { get; set; } = 50;

    /// <summary>The largest <see cref="BusyPollMicroseconds"/> (10 ms).</summary>
    public const int MaxBusyPollMicroseconds = 10_000;

    /// <summary>The epoll loops <see cref="IoThreads"/> asks for on a machine of <paramref name="processors"/>.</summary>
    internal int IoThreadsFor(int processors) => IoThreads > 0 ? IoThreads : Math.Max(1, processors * 3 / 4);

    /// <summary>
    /// The password of the <c>default</c> user (Redis's <c>requirepass</c>): when set, a connection must <c>AUTH</c>
    /// (or <c>HELLO … AUTH</c>) before any other command. Never logged. Default none.
    /// </summary>
    public string? RequirePass
    {
        get => _requirePass;
        set
        {
            _requirePass = string.IsNullOrEmpty(value) ? null : value;
            _requirePassBytes = _requirePass is null ? [] : Encoding.UTF8.GetBytes(_requirePass);
        }
    }

    /// <summary>Whether a connection starts in durable mode (<c>HKV.DURABLE ON</c>): replies to writes only once they
    /// are durable. Default false.</summary>
    public bool DurableWrites { get; set; }

    /// <summary>A PKCS#12 (.pfx) file with the server's certificate and key: when set, every connection speaks TLS.</summary>
    public string? TlsCertificatePath { get; set; }

    /// <summary>The password of <see cref="TlsCertificatePath"/>, if it has one. Never logged.</summary>
    public string? TlsCertificatePassword { get; set; }

    /// <summary>The password's UTF-8 bytes, compared in constant time.</summary>
    internal byte[] RequirePassBytes => _requirePassBytes;
}
