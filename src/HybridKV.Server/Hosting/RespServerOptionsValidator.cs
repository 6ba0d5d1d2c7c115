using System.Net;
using Microsoft.Extensions.Options;

namespace HybridKV.Server.Hosting;

/// <summary>Checks <see cref="RespServerOptions"/> when the host starts, so that a wrong value stops it before it listens.</summary>
internal sealed class RespServerOptionsValidator : IValidateOptions<RespServerOptions>
{
    public ValidateOptionsResult Validate(string? name, RespServerOptions options)
    {
        var failures = new List<string>();
        if (!IPAddress.TryParse(options.BindAddress, out _))
        {
            failures.Add($"{nameof(RespServerOptions.BindAddress)} must be an IP address, such as 127.0.0.1 or ::1.");
        }

        if (options.Port is < 0 or > 65535)
        {
            failures.Add($"{nameof(RespServerOptions.Port)} must be from 0 to 65535.");
        }

        if (options.MaxConnections < 1)
        {
            failures.Add($"{nameof(RespServerOptions.MaxConnections)} must be at least 1.");
        }

        if (options.MaxBulkLength < 1)
        {
            failures.Add($"{nameof(RespServerOptions.MaxBulkLength)} must be at least 1 byte.");
        }

        if (options.MaxArguments < 3)
        {
            failures.Add($"{nameof(RespServerOptions.MaxArguments)} must be at least 3 (SET key value).");
        }

        if (options.MaxRequestBytes < options.MaxBulkLength)
        {
            failures.Add($"{nameof(RespServerOptions.MaxRequestBytes)} must be at least {nameof(RespServerOptions.MaxBulkLength)}.");
        }

        if (options.MaxPendingOutputBytes < 1)
        {
            failures.Add($"{nameof(RespServerOptions.MaxPendingOutputBytes)} must be at least 1 byte.");
        }

        if (options.IoThreads is < 0 or > RespServerOptions.MaxIoThreads)
        {
            failures.Add($"{nameof(RespServerOptions.IoThreads)} must be from 0 (three quarters of the processors) " +
                $"to {RespServerOptions.MaxIoThreads}; it was {options.IoThreads}.");
        }

        if (options.BusyPollMicroseconds is < 0 or > RespServerOptions.MaxBusyPollMicroseconds)
        {
            failures.Add($"{nameof(RespServerOptions.BusyPollMicroseconds)} must be from 0 (sleep at once) to " +
                $"{RespServerOptions.MaxBusyPollMicroseconds}; it was {options.BusyPollMicroseconds}.");
        }

        if (options.TlsCertificatePath is { } path && !File.Exists(path))
        {
            failures.Add($"{nameof(RespServerOptions.TlsCertificatePath)} names no file: {path}.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
