using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using Azure.Storage.Blobs;

namespace HybridKV.Azure.Tests.Support;

/// <summary>
/// A real Azurite blob service for the whole test run: started once on 127.0.0.1 on a free port with in-memory
/// persistence, from the npm package the test project's build installed (Azurite/node_modules), with an account whose
/// key is random for this run (so that the secret test looks for a key nobody else uses). It ends with the test process
/// (its launcher watches this process), or when disposed.
/// </summary>
public sealed class Azurite : IDisposable
{
    public const string AccountName = "hybridkvtest";

    private static readonly Lazy<Task<Azurite>> Shared = new(() => StartAsync(), LazyThreadSafetyMode.ExecutionAndPublication);

    private readonly Process _process;
    private readonly List<string> _output = new();

    private Azurite(Process process, int port, string accountKey)
    {
        _process = process;
        Port = port;
        AccountKey = accountKey;
        BlobEndpoint = new Uri($"http://127.0.0.1:{port}/{AccountName}");
        ConnectionString = $"DefaultEndpointsProtocol=http;AccountName={AccountName};AccountKey={accountKey};" +
                           $"BlobEndpoint={BlobEndpoint};";
    }

    /// <summary>The emulator of this test run, started by the first test that asks.</summary>
    public static Task<Azurite> Instance => Shared.Value;

    public int Port { get; }

    /// <summary>The account's key: random for this run, a secret that must never be printed.</summary>
    public string AccountKey { get; }

    public Uri BlobEndpoint { get; }

    public string ConnectionString { get; }

    /// <summary>A fresh container name, so that tests never share blobs.</summary>
    public static string NewContainerName() => "t" + Guid.NewGuid().ToString("N");

    public BlobContainerClient Container(string name) => new(ConnectionString, name);

    public string Output
    {
        get
        {
            lock (_output)
            {
                return string.Join(Environment.NewLine, _output);
            }
        }
    }

    public void Dispose()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
        }

        _process.Dispose();
    }

    private static async Task<Azurite> StartAsync()
    {
        string directory = Path.Combine(AppContext.BaseDirectory, "Azurite");
        if (!File.Exists(Path.Combine(directory, "node_modules", "azurite", "package.json")))
        {
            // The build copies the launcher beside the tests; the packages stay in the project's folder.
            directory = FindProjectAzuriteDirectory();
        }

        Exception? last = null;
        for (int attempt = 0; attempt < 3; attempt++)
        {
            int port = FreePort();
            string key = Convert.ToBase64String(RandomNumberGenerator.GetBytes(64));
            var start = new ProcessStartInfo("node")
            {
                WorkingDirectory = directory,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            foreach (string argument in (string[])[
                         Path.Combine(directory, "launch.js"), Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture),
                         "--inMemoryPersistence", "--blobHost", "127.0.0.1", "--blobPort", port.ToString(System.Globalization.CultureInfo.InvariantCulture),
                         "--skipApiVersionCheck", "--loose", "--disableTelemetry", "--silent", "--extentMemoryLimit", "4096"])
            {
                start.ArgumentList.Add(argument);
            }

            start.Environment["AZURITE_ACCOUNTS"] = $"{AccountName}:{key}";
            var process = new Process { StartInfo = start };
            var azurite = new Azurite(process, port, key);
            var listening = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            process.OutputDataReceived += (_, e) => azurite.OnLine(e.Data, listening);
            process.ErrorDataReceived += (_, e) => azurite.OnLine(e.Data, listening);
            process.Start();
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
            try
            {
                Task exited = process.WaitForExitAsync();
                Task first = await Task.WhenAny(listening.Task, exited).WaitAsync(TimeSpan.FromSeconds(60));
                if (first == listening.Task)
                {
                    return azurite;
                }

                last = new InvalidOperationException($"Azurite exited ({process.ExitCode}):{Environment.NewLine}{azurite.Output}");
            }
            catch (TimeoutException error)
            {
                last = new InvalidOperationException($"Azurite did not start in 60 s:{Environment.NewLine}{azurite.Output}", error);
            }

            azurite.Dispose();
        }

        throw last!;
    }

    private void OnLine(string? line, TaskCompletionSource listening)
    {
        if (line is null)
        {
            return;
        }

        lock (_output)
        {
            _output.Add(line);
        }

        if (line.Contains("successfully listen", StringComparison.OrdinalIgnoreCase))
        {
            listening.TrySetResult();
        }
    }

    private static int FreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    private static string FindProjectAzuriteDirectory()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            string candidate = Path.Combine(directory.FullName, "test", "HybridKV.Azure.Tests", "Azurite");
            if (File.Exists(Path.Combine(candidate, "node_modules", "azurite", "package.json")))
            {
                return candidate;
            }
        }

        throw new InvalidOperationException(
            $"Azurite is not installed: no test/HybridKV.Azure.Tests/Azurite/node_modules above {AppContext.BaseDirectory}. " +
            "Building the test project runs 'npm ci' there (Node.js and npm must be on PATH).");
    }
}
