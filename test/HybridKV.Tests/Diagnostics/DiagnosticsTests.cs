using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Microsoft.Extensions.Logging;

namespace HybridKV.Tests.Diagnostics;

[Trait("Category", "LargerThanMemory")]
public sealed class FlushFailureLoggingTests
{
    [Fact]
    public void A_flush_failure_is_logged_once_as_an_error_with_its_exception()
    {
        var loggerFactory = new CollectingLoggerFactory();
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { FailWrite = r => r.Sequence >= 5 };
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with { LoggerFactory = loggerFactory }))
        using (var session = store.NewSession())
        {
            Assert.Throws<StorageDeviceException>(() =>
            {
                for (long k = 0; k < 100_000; k++)
                {
                    session.Upsert(k, k);
                }
            });
        }

        var failures = loggerFactory.Entries.Where(e => e.Level == LogLevel.Error).ToList();
        (LogLevel _, int eventId, string message, Exception? error) = Assert.Single(failures);
        Assert.Equal(3, eventId);
        Assert.Contains("to the device failed", message, StringComparison.Ordinal);
        Assert.IsType<StorageDeviceException>(error);
    }
}

[Trait("Category", "Operations")]
[Collection(nameof(ProcessWideTests))]
public sealed class MetricsTests
{
    [Fact]
    public void The_store_publishes_its_offsets_sessions_and_device_traffic()
    {
        using var device = new MemoryDevice(512, 1L << 16);
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device));
        using var session = store.NewSession();
        session.Preload();

        Assert.Equal((Status.Ok, 1L), session.ReadNow(1));
        var values = new ConcurrentDictionary<string, long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "HybridKV")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, _, _) => values[instrument.Name] = value);
        listener.SetMeasurementEventCallback<int>((instrument, value, _, _) => values[instrument.Name] = value);
        listener.Start();
        listener.RecordObservableInstruments();

        Assert.Equal(store.TailAddress, values["hybridkv.log.tail_address"]);
        Assert.Equal(store.HeadAddress, values["hybridkv.log.head_address"]);
        Assert.Equal(store.FlushedUntilAddress, values["hybridkv.log.flushed_until_address"]);
        Assert.Equal(1, values["hybridkv.sessions.open"]);
        Assert.Equal(device.BytesWritten, values["hybridkv.device.bytes_written"]);
        Assert.True(values["hybridkv.device.bytes_read"] > 0);
        Assert.True(values["hybridkv.compaction.memory.bytes_copied"] >= 0);
        Assert.True(values["hybridkv.compaction.memory.pages_left_live"] >= 0);
        Assert.True(values["hybridkv.log.memory_used"] <= store.Settings.MemorySizeBytes);
    }
}
