using System.Diagnostics.CodeAnalysis;
using Azure;
using Azure.Core;
using Azure.Core.Pipeline;

namespace HybridKV.Azure.Tests.Support;

/// <summary>What the <see cref="FaultPolicy"/> does to one request.</summary>
public enum Fault
{
    /// <summary>Sends it.</summary>
    None,

    /// <summary>Answers 503 Server Busy without sending it.</summary>
    Unavailable,

    /// <summary>Sends it (the service applies it), then answers 503 instead of the service's response: a lost answer.</summary>
    AnswerLost,

    /// <summary>Never answers: the SDK's network timeout ends the try.</summary>
    Hang,

    /// <summary>Answers 400 (a failure that is not transient) without sending it.</summary>
    BadRequest,
}

/// <summary>
/// An Azure SDK pipeline policy, placed just before the transport (inside the retry policy and the network timeout),
/// that injects faults into the requests a rule picks, and counts what it did.
/// </summary>
public sealed class FaultPolicy(Func<HttpMessage, Fault> rule) : HttpPipelinePolicy
{
    private int _requests;
    private int _unavailable;
    private int _answersLost;
    private int _hangs;
    private int _badRequests;

    public int Requests => Volatile.Read(ref _requests);

    public int Unavailable => Volatile.Read(ref _unavailable);

    public int AnswersLost => Volatile.Read(ref _answersLost);

    public int Hangs => Volatile.Read(ref _hangs);

    public int BadRequests => Volatile.Read(ref _badRequests);

    /// <summary>Whether the request writes pages (Put Page).</summary>
    public static bool IsPutPage(HttpMessage message) =>
        message.Request.Method == RequestMethod.Put && message.Request.Uri.Query.Contains("comp=page", StringComparison.Ordinal);

    /// <summary>Whether the request reads a range of a blob.</summary>
    public static bool IsRangedRead(HttpMessage message) =>
        message.Request.Method == RequestMethod.Get && message.Request.Headers.Contains("x-ms-range");

    public override async ValueTask ProcessAsync(HttpMessage message, ReadOnlyMemory<HttpPipelinePolicy> pipeline)
    {
        Interlocked.Increment(ref _requests);
        switch (rule(message))
        {
            case Fault.Unavailable:
                Interlocked.Increment(ref _unavailable);
                message.Response = new FakeResponse(503, "ServerBusy");
                return;
            case Fault.AnswerLost:
                await ProcessNextAsync(message, pipeline);
                Interlocked.Increment(ref _answersLost);
                message.Response.Dispose();
                message.Response = new FakeResponse(503, "ServerBusy");
                return;
            case Fault.Hang:
                Interlocked.Increment(ref _hangs);
                // Cancelled by the SDK's network timeout (this policy runs inside it), which the retry policy retries.
                await Task.Delay(Timeout.Infinite, message.CancellationToken);
                return;
            case Fault.BadRequest:
                Interlocked.Increment(ref _badRequests);
                message.Response = new FakeResponse(400, "InvalidHeaderValue");
                return;
            default:
                await ProcessNextAsync(message, pipeline);
                return;
        }
    }

    public override void Process(HttpMessage message, ReadOnlyMemory<HttpPipelinePolicy> pipeline) =>
        ProcessAsync(message, pipeline).AsTask().GetAwaiter().GetResult();

    /// <summary>A response the service never sent.</summary>
    private sealed class FakeResponse(int status, string errorCode) : Response
    {
        private readonly Dictionary<string, string> _headers = new(StringComparer.OrdinalIgnoreCase)
        {
            ["x-ms-error-code"] = errorCode,
            ["Content-Type"] = "application/xml",
        };

        public override int Status => status;

        // The transport classifies a real response; this one never went through it.
        public override bool IsError => true;

        public override string ReasonPhrase => errorCode;

        public override Stream? ContentStream { get; set; } = new MemoryStream(System.Text.Encoding.UTF8.GetBytes(
            $"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{errorCode}</Code><Message>Injected by the test.</Message></Error>"));

        public override string ClientRequestId { get; set; } = string.Empty;

        public override void Dispose() => ContentStream?.Dispose();

        protected override bool TryGetHeader(string name, [NotNullWhen(true)] out string? value) =>
            _headers.TryGetValue(name, out value);

        protected override bool TryGetHeaderValues(string name, [NotNullWhen(true)] out IEnumerable<string>? values)
        {
            bool found = _headers.TryGetValue(name, out string? value);
            values = found ? [value!] : null;
            return found;
        }

        protected override bool ContainsHeader(string name) => _headers.ContainsKey(name);

        protected override IEnumerable<HttpHeader> EnumerateHeaders() =>
            _headers.Select(pair => new HttpHeader(pair.Key, pair.Value));
    }
}
