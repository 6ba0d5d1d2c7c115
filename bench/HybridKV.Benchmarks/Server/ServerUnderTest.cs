using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;

namespace HybridKV.Benchmarks.Server;

/// <summary>
/// One server process on a free loopback port: HybridKV's (the Release build beside the runner), Garnet (the .NET
/// tool) or redis-server (Debian's), each without persistence during the run, so that they do the same work.
/// </summary>
internal sealed class ServerUnderTest : IDisposable
{
    private readonly Process _process;
    private readonly string? _dataDirectory;

    private ServerUnderTest(string name, Process process, int port, string? dataDirectory)
    {
        Name = name;
        _process = process;
        Port = port;
        _dataDirectory = dataDirectory;
    }

    public string Name { get; }

    public int Port { get; }

    /// <summary>The CPU time the server has used so far.</summary>
    public TimeSpan CpuTime
    {
        get
        {
            _process.Refresh();
            return _process.TotalProcessorTime;
        }
    }

    public static ServerUnderTest Start(string name, ServerBenchmarkOptions options)
    {
        int port = FreePort();
        string p = port.ToString(CultureInfo.InvariantCulture);
        string? data = null;
        ProcessStartInfo start;
        switch (name)
        {
            case "hybridkv":
                data = Path.Combine(Path.GetTempPath(), "hybridkv-server-bench-" + Guid.NewGuid().ToString("N"));
                start = new ProcessStartInfo("dotnet");
                // No checkpoint during the run (the peers run without persistence too); the index sized for the keys.
                foreach (string argument in new[]
                         {
                             ServerAssembly(), "--port", p, "--dir", data,
                             "--memory", (2L << 30).ToString(CultureInfo.InvariantCulture),
                             "--HybridKV:IndexBuckets", (1 << 21).ToString(CultureInfo.InvariantCulture),
                             "--checkpoint-interval", "01:00:00", "--HybridKV:IndexCheckpointInterval", "01:00:00",
                             "--Logging:LogLevel:Default", "Warning",
                         })
                {
                    start.ArgumentList.Add(argument);
                }

                break;
            case "hybridkv-kestrel":
                data = Path.Combine(Path.GetTempPath(), "hybridkv-kestrel-bench-" + Guid.NewGuid().ToString("N"));
                start = new ProcessStartInfo("dotnet");
                foreach (string argument in new[]
                         {
                             Path.Combine(AppContext.BaseDirectory, "HybridKV.Benchmarks.dll"), "server-kestrel-host",
                             "--port", p, "--dir", data,
                         })
                {
                    start.ArgumentList.Add(argument);
                }

                break;
            case "garnet":
                string garnet = Path.Combine(options.GarnetToolPath, "garnet-server");
                if (!File.Exists(garnet))
                {
                    Install(options.GarnetToolPath);
                }

                start = new ProcessStartInfo(garnet);
                foreach (string argument in new[] { "--port", p, "--bind", "127.0.0.1" })
                {
                    start.ArgumentList.Add(argument);
                }

                break;
            case "redis":
                start = new ProcessStartInfo("redis-server");
                foreach (string argument in new[] { "--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no" })
                {
                    start.ArgumentList.Add(argument);
                }

                break;
            default:
                throw new ArgumentException($"Unknown server {name}: hybridkv, hybridkv-kestrel, garnet or redis.");
        }

        start.UseShellExecute = false;
        start.RedirectStandardOutput = true;
        start.RedirectStandardError = true;
        Process process = Process.Start(start)!;
        process.OutputDataReceived += (_, _) => { };
        process.ErrorDataReceived += (_, _) => { };
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        var server = new ServerUnderTest(name, process, port, data);
        server.WaitUntilServing();
        return server;
    }

    private void WaitUntilServing()
    {
        var clock = Stopwatch.StartNew();
        while (clock.Elapsed < TimeSpan.FromSeconds(60))
        {
            if (_process.HasExited)
            {
                throw new InvalidOperationException($"{Name} exited with {_process.ExitCode} before it served.");
            }

            try
            {
                using var client = new TcpClient();
                client.Connect(IPAddress.Loopback, Port);
                NetworkStream stream = client.GetStream();
                stream.Write("*1\r\n$4\r\nPING\r\n"u8);
                var reply = new byte[16];
                int read = stream.Read(reply);
                if (read >= 5 && reply[0] == (byte)'+')
                {
                    return;
                }
            }
            catch (SocketException)
            {
            }
            catch (IOException)
            {
            }

            Thread.Sleep(100);
        }

        throw new TimeoutException($"{Name} did not answer PING within a minute.");
    }

    private static void Install(string toolPath)
    {
        string script = Path.Combine(ServerBenchmarkOptions.RepositoryRoot(), "bench", "HybridKV.Benchmarks", "Server",
            "install-garnet.sh");
        using Process install = Process.Start(new ProcessStartInfo("bash") { ArgumentList = { script, toolPath } })!;
        install.WaitForExit();
        if (install.ExitCode != 0)
        {
            throw new InvalidOperationException($"{script} failed with {install.ExitCode}.");
        }
    }

    /// <summary>
    /// The server's program as its own project built it (same configuration as the runner): its copy beside the runner
    /// lacks the assemblies that the runner takes from the ASP.NET Core framework (for the Kestrel variant).
    /// </summary>
    private static string ServerAssembly()
    {
        var output = new DirectoryInfo(AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar));
        string framework = output.Name;
        string configuration = output.Parent!.Name;
        return Path.Combine(ServerBenchmarkOptions.RepositoryRoot(), "src", "HybridKV.Server", "bin", configuration, framework,
            "HybridKV.Server.dll");
    }

    private static int FreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    public void Dispose()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
            _process.WaitForExit();
        }

        _process.Dispose();
        if (_dataDirectory is not null && Directory.Exists(_dataDirectory))
        {
            Directory.Delete(_dataDirectory, recursive: true);
        }
    }
}
