using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace HybridKV.Tests.Support;

/// <summary>A logger factory that keeps every entry, for tests that check what the store logs.</summary>
public sealed class CollectingLoggerFactory : ILoggerFactory, ILogger
{
    public ConcurrentQueue<(LogLevel Level, int EventId, string Message, Exception? Error)> Entries { get; } = new();

    public ILogger CreateLogger(string categoryName) => this;

    public void AddProvider(ILoggerProvider provider) => throw new NotSupportedException();

    public void Dispose()
    {
    }

    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => null;

    public bool IsEnabled(LogLevel logLevel) => true;

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception,
        Func<TState, Exception?, string> formatter) =>
        Entries.Enqueue((logLevel, eventId.Id, formatter(state, exception), exception));
}
