using System.Diagnostics.Metrics;

namespace HybridKV.Server.Hosting;

/// <summary>
/// The server's instruments on a meter named <see cref="MeterName"/>, created through the host's
/// <see cref="IMeterFactory"/>: observed from <see cref="ServerStatistics"/>, so that the command path records nothing
/// of its own.
/// </summary>
internal sealed class ServerMetrics
{
    /// <summary>The meter's name.</summary>
    public const string MeterName = "HybridKV.Server";

    public ServerMetrics(IMeterFactory meterFactory, ServerStatistics statistics)
    {
        Meter meter = meterFactory.Create(new MeterOptions(MeterName));
        meter.CreateObservableUpDownCounter("hybridkv.server.connections", () => statistics.Connections,
            "{connection}", "Connections open now.");
        meter.CreateObservableCounter("hybridkv.server.connections.accepted", () => statistics.ConnectionsAccepted,
            "{connection}", "Connections accepted since start.");
        meter.CreateObservableCounter("hybridkv.server.connections.rejected", () => statistics.ConnectionsRejected,
            "{connection}", "Connections refused because the connection limit was reached.");
        meter.CreateObservableCounter("hybridkv.server.commands", () => statistics.Commands,
            "{command}", "Commands run since start (their rate is the commands per second).");
        meter.CreateObservableCounter("hybridkv.server.bytes.received", () => statistics.BytesReceived,
            "By", "Bytes received from clients.");
        meter.CreateObservableCounter("hybridkv.server.bytes.sent", () => statistics.BytesSent,
            "By", "Bytes sent to clients.");
    }
}
