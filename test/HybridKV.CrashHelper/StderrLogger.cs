using Microsoft.Extensions.Logging;

namespace HybridKV.CrashHelper;

/// <summary>Writes the store's warnings and errors to standard error, where the crash test collects them, and a line
/// on standard output for each compaction.</summary>
internal sealed class StderrLoggerProvider : ILoggerProvider
{
    public ILogger CreateLogger(string categoryName) => new StderrLogger(categoryName);

    public void Dispose()
    {
    }

    private sealed class StderrLogger(string category) : ILogger
    {
        private const int CompactedEventId = 11;

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Information;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception,
            Func<TState, Exception?, string> formatter)
        {
            if (eventId.Id == CompactedEventId)
            {
                // The crash test checks that kills landed while the log was being compacted.
                Console.WriteLine("compacted");
            }

            if (logLevel >= LogLevel.Warning)
            {
                Console.Error.WriteLine($"{logLevel} {category} {eventId.Id}: {formatter(state, exception)} {exception}");
            }
        }
    }
}
