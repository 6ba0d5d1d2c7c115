using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>Options bound from configuration and validated when the host starts, each failure naming the option.</summary>
[Trait("Category", "Hosting")]
public sealed class OptionsTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Options_are_bound_from_the_HybridKV_section()
    {
        string directory = _directory.NewSubdirectory();
        HostedCounters hosted = HostedCounters.Build(directory: null, configure: null, configuration: new Dictionary<string, string?>
        {
            ["HybridKV:Directory"] = directory,
            ["HybridKV:SessionPoolSize"] = "3",
            ["HybridKV:CommitDelay"] = "00:00:00.002",
            ["HybridKV:CheckpointMode"] = "Snapshot",
        });
        await using (hosted)
        {
            await hosted.Host.StartAsync();
            HybridKVOptions options = hosted.StoreHost.Options;
            Assert.Equal(directory, options.Directory);
            Assert.Equal(3, options.SessionPoolSize);
            Assert.Equal(TimeSpan.FromMilliseconds(2), options.CommitDelay);
            Assert.Equal(Checkpoints.CheckpointMode.Snapshot, options.CheckpointMode);
            Assert.Equal(3, hosted.Pool.SessionIds.Count);
            await hosted.Pool.RunDurableAsync(session => session.RMW(1, 1));
            Assert.True(Directory.Exists(Path.Combine(directory, "checkpoints")));
        }
    }

    [Theory]
    [InlineData(nameof(HybridKVOptions.Directory), null, "HybridKVOptions.Directory")]
    [InlineData(nameof(HybridKVOptions.SessionPoolSize), "0", "HybridKVOptions.SessionPoolSize is 0")]
    [InlineData(nameof(HybridKVOptions.SessionPoolSize), "200", "from 1 to MaxSessions (16)")]
    [InlineData(nameof(HybridKVOptions.CommitDelay), "00:00:05", "HybridKVOptions.CommitDelay is 00:00:05")]
    [InlineData(nameof(HybridKVOptions.CheckpointInterval), "00:00:00", "HybridKVOptions.CheckpointInterval")]
    [InlineData(nameof(HybridKVOptions.PageSizeBits), "5", "HybridKVOptions.PageSizeBits")]
    [InlineData(nameof(HybridKVOptions.IndexBuckets), "1000", "IndexBuckets must be a power of two")]
    public async Task An_invalid_option_stops_the_host_with_a_message_naming_it(string option, string? value, string expected)
    {
        string directory = _directory.NewSubdirectory();
        HostedCounters hosted = HostedCounters.Build(
            directory: option == nameof(HybridKVOptions.Directory) ? null : directory,
            configuration: new Dictionary<string, string?> { [$"HybridKV:{option}"] = value });
        await using (hosted)
        {
            OptionsValidationException error = await Assert.ThrowsAsync<OptionsValidationException>(
                () => hosted.Host.StartAsync());
            Assert.Contains(expected, error.Message, StringComparison.Ordinal);
            Assert.Equal(typeof(HybridKVOptions), error.OptionsType);

            // Nothing was created: the store never opened.
            Assert.False(Directory.Exists(Path.Combine(directory, "log")));
        }
    }

    [Fact]
    public void Adding_the_same_store_type_twice_is_refused()
    {
        var services = new ServiceCollection();
        services.AddHybridKV<Counters.Store, Counters.Session>();
        ArgumentException error = Assert.Throws<ArgumentException>(
            () => services.AddHybridKV<Counters.Store, Counters.Session>());
        Assert.Contains("already added", error.Message, StringComparison.Ordinal);
    }
}
