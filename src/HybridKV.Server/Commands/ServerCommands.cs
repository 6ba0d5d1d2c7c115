using System.Diagnostics;
using System.Globalization;
using System.Text;
using HybridKV.Server.Hosting;

namespace HybridKV.Server.Commands;

/// <summary>INFO, COMMAND, CONFIG, SAVE, BGSAVE, LASTSAVE.</summary>
internal static class ServerCommands
{
    private static readonly string[] DefaultSections = ["server", "clients", "memory", "persistence", "stats"];

    /// <summary>INFO [section ...]: server, clients, memory, persistence, stats, keyspace (a scan: only when named).</summary>
    public static async ValueTask InfoAsync(CommandContext c, byte[][] args, CancellationToken cancellationToken)
    {
        var sections = new List<string>();
        for (int i = 1; i < args.Length; i++)
        {
            string section = Encoding.UTF8.GetString(args[i]).ToLowerInvariant();
            if (section is "all" or "everything")
            {
                sections.AddRange(DefaultSections);
                sections.Add("keyspace");
            }
            else if (section == "default")
            {
                sections.AddRange(DefaultSections);
            }
            else
            {
                sections.Add(section);
            }
        }

        if (sections.Count == 0)
        {
            sections.AddRange(DefaultSections);
        }

        var text = new StringBuilder();
        ServerContext server = c.Server;
        RespStore store = server.Store;
        ServerStatistics stats = server.Statistics;
        foreach (string section in sections.Distinct())
        {
            switch (section)
            {
                case "server":
                    text.Append("# Server\r\n");
                    Line(text, "redis_version", ConnectionCommands.CompatibleRedisVersion);
                    Line(text, "hybridkv_version", typeof(ServerCommands).Assembly.GetName().Version?.ToString() ?? "0");
                    Line(text, "redis_mode", "standalone");
                    Line(text, "os", Environment.OSVersion.ToString());
                    Line(text, "process_id", Environment.ProcessId);
                    Line(text, "tcp_port", server.Port);
                    Line(text, "uptime_in_seconds", (long)(DateTimeOffset.UtcNow - server.StartedAt).TotalSeconds);
                    break;
                case "clients":
                    text.Append("# Clients\r\n");
                    Line(text, "connected_clients", stats.Connections);
                    Line(text, "maxclients", server.Options.MaxConnections);
                    break;
                case "memory":
                    text.Append("# Memory\r\n");
                    Line(text, "used_memory", GC.GetTotalMemory(false) + store.Settings.MemorySizeBytes);
                    Line(text, "used_memory_rss", Process.GetCurrentProcess().WorkingSet64);
                    // Every byte the process allocated since it started: a measure of allocations per command.
                    Line(text, "hybridkv_gc_allocated_bytes", GC.GetTotalAllocatedBytes(precise: false));
                    Line(text, "hybridkv_log_memory_bytes", store.Settings.MemorySizeBytes);
                    Line(text, "hybridkv_log_size_bytes", store.TailAddress - store.BeginAddress);
                    Line(text, "hybridkv_log_tail_address", store.TailAddress);
                    Line(text, "hybridkv_log_begin_address", store.BeginAddress);
                    Line(text, "hybridkv_index_buckets", store.IndexBucketCount);
                    break;
                case "persistence":
                    text.Append("# Persistence\r\n");
                    Line(text, "loading", 0);
                    Line(text, "rdb_changes_since_last_save", store.HasUncommittedOperations ? 1 : 0);
                    Line(text, "rdb_last_save_time", LastSaveSeconds(server));
                    Line(text, "rdb_last_bgsave_status", server.Commits.LastFailure is null ? "ok" : "err");
                    Line(text, "hybridkv_checkpoints", server.Commits.CheckpointCount);
                    Line(text, "hybridkv_recovered_checkpoint", server.Recovery?.Token.ToString() ?? "none");
                    Line(text, "hybridkv_device_error", store.DeviceError is null ? 0 : 1);
                    break;
                case "stats":
                    text.Append("# Stats\r\n");
                    Line(text, "total_connections_received", stats.ConnectionsAccepted);
                    Line(text, "total_commands_processed", stats.Commands);
                    Line(text, "total_net_input_bytes", stats.BytesReceived);
                    Line(text, "total_net_output_bytes", stats.BytesSent);
                    Line(text, "rejected_connections", stats.ConnectionsRejected);
                    Line(text, "hybridkv_open_sessions", store.OpenSessionCount);
                    break;
                case "keyspace":
                    text.Append("# Keyspace\r\n");
                    long keys = await KeyCommands.CountKeysAsync(store, cancellationToken).ConfigureAwait(false);
                    if (keys > 0)
                    {
                        text.Append(CultureInfo.InvariantCulture, $"db0:keys={keys},expires=0,avg_ttl=0\r\n");
                    }

                    break;
                default:
                    continue;
            }

            text.Append("\r\n");
        }

        c.Writer.WriteBulk(text.ToString());
    }

    /// <summary>COMMAND [COUNT | DOCS | INFO]: enough for redis-cli, which asks for the docs and can do without them.</summary>
    public static void Command(CommandContext c, CommandFrame f)
    {
        if (f.Count > 1 && CommandNames.Is(f[1], "COUNT"u8))
        {
            c.Writer.WriteInteger(Enum.GetValues<RespCommand>().Length - 1);
        }
        else if (f.Count > 1 && CommandNames.Is(f[1], "DOCS"u8))
        {
            c.Writer.WriteMapHeader(0);
        }
        else
        {
            c.Writer.WriteArrayHeader(0);
        }
    }

    /// <summary>CONFIG GET answers with nothing (clients ask for settings they can do without); the rest is refused.</summary>
    public static void Config(CommandContext c, CommandFrame f)
    {
        if (CommandNames.Is(f[1], "GET"u8))
        {
            c.Writer.WriteMapHeader(0);
        }
        else
        {
            c.Writer.WriteError("ERR CONFIG is not supported: the server is configured through its host's configuration");
        }
    }

    /// <summary>SAVE: a checkpoint (shared with other waiters), durable when the reply comes.</summary>
    public static async ValueTask SaveAsync(CommandContext c, CancellationToken cancellationToken)
    {
        try
        {
            await c.Server.Commits.RequestAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
            c.Writer.WriteOk();
        }
        catch (Exception error) when (error is not OperationCanceledException)
        {
            c.Writer.WriteError($"ERR checkpoint failed ({error.GetType().Name})");
        }
    }

    /// <summary>BGSAVE: asks for a checkpoint and replies at once.</summary>
    public static void BgSave(CommandContext c)
    {
        try
        {
            // The scheduler records a failure for INFO and the health check, and logs it.
            _ = c.Server.Commits.RequestAsync().ContinueWith(t => _ = t.Exception, CancellationToken.None,
                TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
            c.Writer.WriteSimpleString("Background saving started"u8);
        }
        catch (InvalidOperationException)
        {
            c.Writer.WriteError("ERR the server is stopping");
        }
    }

    /// <summary>LASTSAVE: when the last durable checkpoint started (or recovery), in Unix seconds.</summary>
    public static void LastSave(CommandContext c) => c.Writer.WriteInteger(LastSaveSeconds(c.Server));

    private static long LastSaveSeconds(ServerContext server) =>
        (server.Commits.LastCommit ?? server.StartedAt).ToUnixTimeSeconds();

    private static void Line(StringBuilder text, string name, object value) =>
        text.Append(CultureInfo.InvariantCulture, $"{name}:{value}\r\n");
}
