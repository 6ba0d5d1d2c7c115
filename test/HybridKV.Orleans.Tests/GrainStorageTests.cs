using HybridKV.Devices;
using Microsoft.Extensions.DependencyInjection;
using Orleans;
using Orleans.Runtime;
using Orleans.Storage;
using Orleans.TestingHost;

namespace HybridKV.Orleans.Tests;

/// <summary>HybridKV grain storage in Orleans' in-process test cluster, over real files.</summary>
[Trait("Category", "Orleans")]
public sealed class GrainStorageTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Grain_state_is_written_read_back_after_deactivation_and_versioned_by_etag()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 1);
        await using (cluster)
        {
            ICounterGrain grain = cluster.GrainFactory.GetGrain<ICounterGrain>("a");
            Assert.Null(await grain.GetETagAsync());
            Assert.Equal(3, await grain.AddAsync(3));
            string? first = await grain.GetETagAsync();
            Assert.Equal(10, await grain.AddAsync(7));
            string? second = await grain.GetETagAsync();
            Assert.NotNull(first);
            Assert.NotEqual(first, second);

            await grain.DeactivateAsync();
            Assert.Equal(10, await grain.GetAsync());
            Assert.Equal(second, await grain.GetETagAsync());
        }
    }

    [Fact]
    public async Task State_survives_a_restart_of_the_silo()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 1);
        await using (cluster)
        {
            for (int i = 0; i < 10; i++)
            {
                await cluster.GrainFactory.GetGrain<ICounterGrain>($"g{i}").AddAsync(i + 1);
            }

            await cluster.RestartSiloAsync(cluster.Primary!);
            for (int i = 0; i < 10; i++)
            {
                Assert.Equal(i + 1, await cluster.GrainFactory.GetGrain<ICounterGrain>($"g{i}").GetAsync());
            }
        }
    }

    [Fact]
    public async Task Clearing_state_keeps_the_version_going_so_an_etag_from_before_is_refused()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 1);
        await using (cluster)
        {
            ICounterGrain grain = cluster.GrainFactory.GetGrain<ICounterGrain>("c");
            await grain.AddAsync(5);
            string? before = await grain.GetETagAsync();
            await grain.ClearAsync();
            await grain.DeactivateAsync();
            Assert.Equal(0, await grain.GetAsync());
            Assert.NotEqual(before, await grain.GetETagAsync());
            Assert.Equal(2, await grain.AddAsync(2));
        }
    }

    [Fact]
    public async Task Two_silos_each_keep_their_state_in_their_own_directory()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 2);
        await using (cluster)
        {
            var silos = new HashSet<string>();
            for (int i = 0; i < 20; i++)
            {
                ICounterGrain grain = cluster.GrainFactory.GetGrain<ICounterGrain>($"two-{i}");
                await grain.AddAsync(i);
                silos.Add(await grain.GetSiloAsync());
            }

            foreach (SiloHandle silo in cluster.Silos)
            {
                Assert.True(Directory.Exists(Path.Combine(_directory.Path, silo.Name, "checkpoints")), silo.Name);
            }

            for (int i = 0; i < 20; i++)
            {
                Assert.Equal(i, await cluster.GrainFactory.GetGrain<ICounterGrain>($"two-{i}").GetAsync());
            }
        }
    }

    [Fact]
    public async Task A_second_silo_on_the_same_directory_is_refused_clearly()
    {
        Exception error = await Assert.ThrowsAnyAsync<Exception>(async () =>
        {
            TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 2, shareOneDirectory: true);
            await cluster.DisposeAsync();
        });
        Assert.True(Contains<DirectoryInUseException>(error), error.ToString());
    }

    [Fact]
    public async Task A_write_with_a_stale_etag_is_refused_and_overwrites_nothing()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 1);
        await using (cluster)
        {
            IGrainStorage storage = StorageOf(cluster.Primary!);
            GrainId id = GrainId.Create("counter", "stale");
            var first = new GrainState<CounterState>(new CounterState { Count = 1 });
            await storage.WriteStateAsync("counter", id, first);

            // Two activations read the same version; the first to write wins, the second is refused.
            var a = new GrainState<CounterState>(new CounterState());
            var b = new GrainState<CounterState>(new CounterState());
            await storage.ReadStateAsync("counter", id, a);
            await storage.ReadStateAsync("counter", id, b);
            Assert.Equal(first.ETag, a.ETag);
            a.State!.Count = 2;
            await storage.WriteStateAsync("counter", id, a);
            b.State!.Count = 3;
            InconsistentStateException refused = await Assert.ThrowsAsync<InconsistentStateException>(
                () => storage.WriteStateAsync("counter", id, b));
            Assert.Equal(a.ETag, refused.StoredEtag);
            Assert.Equal(first.ETag, refused.CurrentEtag);

            var check = new GrainState<CounterState>(new CounterState());
            await storage.ReadStateAsync("counter", id, check);
            Assert.Equal(2, check.State!.Count);
            Assert.Equal(a.ETag, check.ETag);

            // A state that was never written takes no ETag; writing over it with one is refused too.
            var fresh = new GrainState<CounterState>(new CounterState()) { ETag = "7" };
            await Assert.ThrowsAsync<InconsistentStateException>(
                () => storage.WriteStateAsync("counter", GrainId.Create("counter", "never"), fresh));
        }
    }

    [Fact]
    public async Task Of_many_concurrent_writers_with_one_etag_exactly_one_wins()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 1);
        await using (cluster)
        {
            IGrainStorage storage = StorageOf(cluster.Primary!);
            GrainId id = GrainId.Create("counter", "race");
            var seed = new GrainState<CounterState>(new CounterState());
            await storage.WriteStateAsync("counter", id, seed);

            const int Writers = 16;
            Task[] writes = Enumerable.Range(1, Writers).Select(i => Task.Run(() => storage.WriteStateAsync("counter", id,
                new GrainState<CounterState>(new CounterState { Count = i }) { ETag = seed.ETag }))).ToArray();
            await Task.WhenAll(writes.Select(w => w.ContinueWith(_ => { }, TaskScheduler.Default)));
            Assert.Equal(1, writes.Count(w => w.IsCompletedSuccessfully));
            Assert.All(writes.Where(w => !w.IsCompletedSuccessfully),
                w => Assert.IsType<InconsistentStateException>(w.Exception!.InnerException));
        }
    }

    [Fact]
    public async Task A_write_is_acknowledged_only_once_durable_and_is_in_the_files_the_silo_leaves()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 1);
        string siloDirectory = Path.Combine(_directory.Path, cluster.Primary!.Name);
        GrainId id = GrainId.Create("counter", "durable");
        await using (cluster)
        {
            var storage = (HybridKVGrainStorage)StorageOf(cluster.Primary!);
            await storage.WriteStateAsync("counter", id, new GrainState<CounterState>(new CounterState { Count = 42 }));
            Assert.False(storage.Host.Store!.HasUncommittedOperations);

            // The files as they are now, the silo still running: what a crash would leave.
            string copy = CopyWithoutLocks(siloDirectory);
            using var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>(
                new StoreSettings { LogDirectory = copy, IndexBuckets = 1 << 10, PageSizeBits = 16, MemorySizeBytes = 1 << 20 });
            await store.RecoverAsync();
            using var session = store.NewSession();
            Assert.Equal(Status.Ok, session.Read(HybridKVGrainStorage.KeyOf("counter", id), out System.Buffers.IMemoryOwner<byte>? record));
            using (record)
            {
                Assert.Equal((1L, true), GrainStateRecord.ReadHeader(record!.Memory.Span));
            }
        }
    }

    private string CopyWithoutLocks(string source)
    {
        string target = Path.Combine(_directory.Path, "copy-" + Guid.NewGuid().ToString("N"));
        foreach (string file in Directory.GetFiles(source, "*", SearchOption.AllDirectories))
        {
            if (Path.GetFileName(file) == "LOCK")
            {
                continue;
            }

            string destination = Path.Combine(target, Path.GetRelativePath(source, file));
            Directory.CreateDirectory(Path.GetDirectoryName(destination)!);
            File.Copy(file, destination);
        }

        return target;
    }

    private static IGrainStorage StorageOf(SiloHandle silo) =>
        ((InProcessSiloHandle)silo).SiloHost.Services.GetRequiredKeyedService<IGrainStorage>(CounterGrain.StorageName);

    private static bool Contains<T>(Exception error) where T : Exception =>
        error is T || (error.InnerException is { } inner && Contains<T>(inner)) ||
        (error is AggregateException aggregate && aggregate.InnerExceptions.Any(Contains<T>));
}
