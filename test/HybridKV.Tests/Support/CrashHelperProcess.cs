using System.Diagnostics;

namespace HybridKV.Tests.Support;

/// <summary>The crash helper (HybridKV.CrashHelper) as a child process, with its output collected line by line.</summary>
internal sealed class CrashHelperProcess : IDisposable
{
    private readonly Process _process;
    private readonly List<string> _lines = new();
    private readonly object _lock = new();
    private readonly SemaphoreSlim _lineArrived = new(0);

    private CrashHelperProcess(Process process)
    {
        _process = process;
        _process.OutputDataReceived += (_, e) => OnLine(e.Data);
        _process.ErrorDataReceived += (_, e) => OnLine(e.Data);
    }

    public int? ExitCode { get; private set; }

    /// <summary>The child's process id.</summary>
    public int ProcessId => _process.Id;

    public string Output
    {
        get
        {
            lock (_lock)
            {
                return string.Join(Environment.NewLine, _lines);
            }
        }
    }

    public static CrashHelperProcess Start(params string[] arguments) =>
        StartHelper("HybridKV.CrashHelper.dll", new Dictionary<string, string>(), arguments);

    /// <summary>Starts another helper built beside the tests (the Azure one), with extra environment variables (for
    /// what must not be on a command line, such as a connection string).</summary>
    public static CrashHelperProcess StartHelper(
        string assembly, IReadOnlyDictionary<string, string> environment, params string[] arguments)
    {
        var start = new ProcessStartInfo("dotnet")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach ((string name, string value) in environment)
        {
            start.Environment[name] = value;
        }

        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, assembly));
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        var helper = new CrashHelperProcess(new Process { StartInfo = start });
        helper._process.Start();
        helper._process.BeginOutputReadLine();
        helper._process.BeginErrorReadLine();
        return helper;
    }

    public bool HasSeen(string line)
    {
        lock (_lock)
        {
            return _lines.Any(l => l.StartsWith(line, StringComparison.Ordinal));
        }
    }

    public async Task WaitForLineAsync(string line, TimeSpan timeout)
    {
        using var deadline = new CancellationTokenSource(timeout);
        while (!HasSeen(line))
        {
            if (_process.HasExited && !HasSeen(line))
            {
                await _process.WaitForExitAsync(deadline.Token);
                Assert.Fail($"The helper exited ({_process.ExitCode}) before printing '{line}':{Environment.NewLine}{Output}");
            }

            await _lineArrived.WaitAsync(TimeSpan.FromMilliseconds(200), deadline.Token);
        }
    }

    public async Task<int> WaitForExitAsync(TimeSpan timeout)
    {
        using var deadline = new CancellationTokenSource(timeout);
        await _process.WaitForExitAsync(deadline.Token);
        return _process.ExitCode;
    }

    /// <summary>SIGKILL: no finalizer, no flush, no disposal runs in the helper.</summary>
    public void Kill()
    {
        if (_process.HasExited)
        {
            ExitCode = _process.ExitCode;
            return;
        }

        _process.Kill(entireProcessTree: false);
        _process.WaitForExit();
    }

    public void Dispose()
    {
        if (!_process.HasExited)
        {
            _process.Kill();
        }

        _process.Dispose();
        _lineArrived.Dispose();
    }

    private void OnLine(string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (_lock)
        {
            _lines.Add(line);
        }

        _lineArrived.Release();
    }
}
