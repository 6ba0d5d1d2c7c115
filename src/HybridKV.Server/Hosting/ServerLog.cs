using Microsoft.Extensions.Logging;

namespace HybridKV.Server.Hosting;

/// <summary>
/// The server's log messages, with stable event ids (1100–1199; the hosting package's are 1000–1099). None carries a
/// password, a key or a value: a client's bytes are never logged.
/// </summary>
internal static partial class ServerLog
{
    [LoggerMessage(EventId = 1100, Level = LogLevel.Information,
        Message = "HybridKV server listening on {Address}:{Port} (TLS {Tls}, password {PasswordRequired})")]
    public static partial void Listening(ILogger logger, string address, int port, bool tls, bool passwordRequired);

    [LoggerMessage(EventId = 1101, Level = LogLevel.Warning,
        Message = "Refused a connection from {Remote}: {Max} connections are open")]
    public static partial void ConnectionRefused(ILogger logger, string? remote, int max);

    [LoggerMessage(EventId = 1102, Level = LogLevel.Information,
        Message = "Closed connection {ClientId}: malformed or oversized request ({Reason})")]
    public static partial void ProtocolError(ILogger logger, long clientId, string reason);

    [LoggerMessage(EventId = 1103, Level = LogLevel.Warning, Message = "Connection {ClientId} failed to authenticate")]
    public static partial void AuthenticationFailed(ILogger logger, long clientId);

    [LoggerMessage(EventId = 1104, Level = LogLevel.Warning, Message = "Connection {ClientId} failed")]
    public static partial void ConnectionFailed(ILogger logger, long clientId, Exception error);

    [LoggerMessage(EventId = 1105, Level = LogLevel.Information,
        Message = "HybridKV server stopped listening; {Connections} connections closed")]
    public static partial void Stopped(ILogger logger, int connections);

    [LoggerMessage(EventId = 1106, Level = LogLevel.Information, Message = "TLS handshake with {Remote} failed")]
    public static partial void TlsFailed(ILogger logger, string? remote, Exception error);

    [LoggerMessage(EventId = 1107, Level = LogLevel.Information,
        Message = "Connection {ClientId} continued session {SessionId}, durable until serial number {UntilSerialNo}")]
    public static partial void SessionContinued(ILogger logger, long clientId, Guid sessionId, long untilSerialNo);

    [LoggerMessage(EventId = 1108, Level = LogLevel.Error,
        Message = "A command of connection {ClientId} failed; the connection is closed")]
    public static partial void CommandFailed(ILogger logger, long clientId, Exception error);

    [LoggerMessage(EventId = 1109, Level = LogLevel.Warning,
        Message = "Refused a connection from {Remote}: the store has no free session")]
    public static partial void NoSession(ILogger logger, string? remote);
}
