using HybridKV.Checkpoints;
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
        // Read from the device a second time: copied to the tail (StoreSettings.CopyHotReadsToTail).
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
        Assert.InRange(values["hybridkv.device.bytes_read_by_operations"], 512, values["hybridkv.device.bytes_read"]);
        Assert.Equal(1, values["hybridkv.reads.copied_to_tail"]);
        Assert.True(values["hybridkv.compaction.memory.bytes_copied"] >= 0);
        Assert.True(values["hybridkv.compaction.memory.pages_left_live"] >= 0);
        Assert.True(values["hybridkv.log.memory_used"] <= store.Settings.MemorySizeBytes);
    }
}

/// <summary>Operators see which mode each automatic checkpoint chose.</summary>
[Trait("Category", "Checkpoint")]
[Collection(nameof(ProcessWideTests))]
public sealed class CheckpointMetricsTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Committed_checkpoints_are_counted_by_the_mode_that_captured_the_log()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload();
        await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Auto);
        await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.Snapshot);
        Assert.Equal((Status.Ok, 1L), session.ReadNow(1));
        await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.Auto);

        var committed = new ConcurrentDictionary<string, long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "HybridKV" && instrument.Name == "hybridkv.checkpoints.committed")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            committed[(string)tags.ToArray().Single(t => t.Key == "hybridkv.checkpoint.mode").Value!] = value);
        listener.Start();
        listener.RecordObservableInstruments();

        // The first automatic one followed blind upserts only; the second, a read from the device.
        Assert.Equal(1, committed["fold_over"]);
        Assert.Equal(2, committed["snapshot"]);
    }
}

/// <summary>The store's meter comes from the host's <see cref="IMeterFactory"/> when one is given.</summary>
[Trait("Category", "LargerThanMemory")]
public sealed class MeterFactoryTests
{
    [Fact]
    public void A_store_given_a_meter_factory_publishes_its_instruments_on_a_meter_of_its_own_from_it()
    {
        using var factory = new RecordingMeterFactory();
        using var firstDevice = new MemoryDevice(512, 1L << 16);
        using var secondDevice = new MemoryDevice(512, 1L << 16);
        using var first = StoreOnDevice.Create(StoreOnDevice.Settings(device: firstDevice) with { MeterFactory = factory });
        using var second = StoreOnDevice.Create(StoreOnDevice.Settings(device: secondDevice) with { MeterFactory = factory });

        // One meter per store, made by the factory (its scope), each tagged with its own instance.
        Assert.Equal(2, factory.Created.Count);
        Assert.All(factory.Created, meter => Assert.Equal("HybridKV", meter.Name));
        Assert.All(factory.Created, meter => Assert.Same(factory, meter.Scope));
        Assert.NotEqual(
            factory.Created[0].Tags!.Single(tag => tag.Key == "hybridkv.store.instance").Value,
            factory.Created[1].Tags!.Single(tag => tag.Key == "hybridkv.store.instance").Value);

        var published = new ConcurrentBag<Meter>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                if (instrument.Name == "hybridkv.log.tail_address")
                {
                    published.Add(instrument.Meter);
                }
            },
        };
        listener.Start();
        Assert.Contains(factory.Created[0], published);
        Assert.Contains(factory.Created[1], published);
    }

    /// <summary>Makes meters as a host's factory does, and remembers them.</summary>
    private sealed class RecordingMeterFactory : IMeterFactory
    {
        public List<Meter> Created { get; } = [];

        public Meter Create(MeterOptions options)
        {
            var meter = new Meter(options.Name, options.Version, options.Tags, this);
            Created.Add(meter);
            return meter;
        }

        public void Dispose()
        {
            foreach (Meter meter in Created)
            {
                meter.Dispose();
            }
        }
    }
}
