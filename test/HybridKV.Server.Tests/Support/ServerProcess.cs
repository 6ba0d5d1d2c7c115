using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text.RegularExpressions;

namespace HybridKV.Server.Tests.Support;

/// <summary>The server as a separate process (its dll is built beside the tests), its output collected.</summary>
public sealed partial class ServerProcess : IDisposable
{
    private readonly Process _process;
    private readonly List<string> _lines = new();
    private readonly TaskCompletionSource<int> _port = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private ServerProcess(Process process)
    {
        _process = process;
        _process.OutputDataReceived += (_, e) => OnLine(e.Data);
        _process.ErrorDataReceived += (_, e) => OnLine(e.Data);
        _process.EnableRaisingEvents = true;
        _process.Exited += (_, _) => _port.TrySetException(
            new InvalidOperationException($"The server exited before it listened:{Environment.NewLine}{Output}"));
    }

    public int Port { get; private set; }

    public string Output
    {
        get
        {
            lock (_lines)
            {
                return string.Join(Environment.NewLine, _lines);
            }
        }
    }

    /// <summary>Starts the server on a free loopback port over <paramref name="directory"/>, and waits until it listens.</summary>
    public static async Task<ServerProcess> StartAsync(string directory, params string[] arguments)
    {
        var start = new ProcessStartInfo("dotnet")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "HybridKV.Server.dll"));
        foreach (string argument in new[] { "--port", "0", "--dir", directory }.Concat(arguments))
        {
            start.ArgumentList.Add(argument);
        }

        var server = new ServerProcess(new Process { StartInfo = start });
        server._process.Start();
        server._process.BeginOutputReadLine();
        server._process.BeginErrorReadLine();
        server.Port = await server._port.Task.WaitAsync(TimeSpan.FromSeconds(60));
        return server;
    }

    /// <summary>SIGKILL: nothing runs in the server any more, no checkpoint, no flush.</summary>
    public void Kill()
    {
        _process.Kill(entireProcessTree: false);
        _process.WaitForExit();
    }

    /// <summary>
    /// SIGTERM: the host stops as on Ctrl+C (SIGINT), through the same shutdown. Not SIGINT itself: a test run started
    /// in the background of a shell inherits SIGINT ignored, and the runtime keeps it so.
    /// </summary>
    public async Task<int> TerminateAsync()
    {
        Assert.Equal(0, SendSignal(_process.Id, 15));
        try
        {
            await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(60));
        }
        catch (TimeoutException)
        {
            Assert.Fail($"The server did not stop within a minute of SIGTERM:{Environment.NewLine}{Output}");
        }

        return _process.ExitCode;
    }

    [LibraryImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static partial int SendSignal(int pid, int signal);

    private void OnLine(string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (_lines)
        {
            _lines.Add(line);
        }

        Match listening = ListeningLine().Match(line);
        if (listening.Success)
        {
            _port.TrySetResult(int.Parse(listening.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture));
        }
    }

    [GeneratedRegex(@"listening on [^ ]+:(\d+)")]
    private static partial Regex ListeningLine();

    public void Dispose()
    {
        if (!_process.HasExited)
        {
            _process.Kill();
            _process.WaitForExit();
        }

        _process.Dispose();
    }
}
