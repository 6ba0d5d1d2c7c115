using System.Diagnostics;
using System.Text;

namespace HybridKV.Tests.Support;

/// <summary>Runs the .NET CLI as a child process, isolated from the MSBuild state of the test run that started it.</summary>
internal static class DotnetCli
{
    // Set by the outer build for its own MSBuild; a nested build must find the SDK by itself.
    private static readonly string[] InheritedMsBuildVariables =
        ["MSBuildSDKsPath", "MSBUILD_EXE_PATH", "MSBuildExtensionsPath", "MSBuildLoadMicrosoftTargetsReadOnly"];

    public static async Task<string> RunAsync(string workingDirectory, TimeSpan timeout, params string[] arguments)
    {
        var start = new ProcessStartInfo(Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") ?? "dotnet")
        {
            WorkingDirectory = workingDirectory,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        foreach (string variable in InheritedMsBuildVariables)
        {
            start.Environment.Remove(variable);
        }

        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        start.Environment["DOTNET_NOLOGO"] = "1";
        start.Environment["MSBUILDDISABLENODEREUSE"] = "1";

        var output = new StringBuilder();
        using var process = new Process { StartInfo = start };
        process.OutputDataReceived += (_, line) => Append(output, line.Data);
        process.ErrorDataReceived += (_, line) => Append(output, line.Data);
        process.Start();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        using var deadline = new CancellationTokenSource(timeout);
        try
        {
            await process.WaitForExitAsync(deadline.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            Assert.Fail($"'dotnet {string.Join(' ', arguments)}' did not finish in {timeout}:{Environment.NewLine}{Text(output)}");
        }

        process.WaitForExit();
        string text = Text(output);
        Assert.True(process.ExitCode == 0,
            $"'dotnet {string.Join(' ', arguments)}' exited with {process.ExitCode}:{Environment.NewLine}{text}");
        return text;
    }

    private static void Append(StringBuilder output, string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (output)
        {
            output.AppendLine(line);
        }
    }

    private static string Text(StringBuilder output)
    {
        lock (output)
        {
            return output.ToString();
        }
    }
}
