using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Safety;

/// <summary>
/// Two stores on one directory (issue 17, item 2): the second fails at once, naming the directory and the holder; the
/// lock goes with the holder's <c>Dispose</c>, or with its process.
/// </summary>
[Trait("Category", "Safety")]
[Collection(nameof(ProcessWideTests))]
public sealed class DirectoryLockTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_second_store_on_the_same_directory_in_this_process_fails_until_the_first_is_disposed()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory);
        var first = TestStores.Create(settings);
        using (var session = first.NewSession())
        {
            session.Upsert(1, 1);
        }

        await first.TakeCheckpointAsync();
        var refused = Assert.Throws<DirectoryInUseException>(() => TestStores.Create(settings));
        Assert.Equal(Path.Combine(directory, "log"), refused.Directory);
        Assert.Contains(Path.Combine(directory, "log"), refused.Message, StringComparison.Ordinal);
        Assert.Contains($"process {Environment.ProcessId}", refused.Holder, StringComparison.Ordinal);

        // The refused store released what it had taken: once the first is gone, the directory opens.
        first.Dispose();
        using var second = TestStores.Create(settings);
        Assert.NotNull(await second.RecoverAsync());
        using var reader = second.NewSession();
        Assert.Equal((Status.Ok, 1L), reader.ReadNow(1));
    }

    [Fact]
    public void A_checkpoint_directory_and_a_log_directory_are_each_held_by_one_writer()
    {
        string directory = _directory.NewSubdirectory();
        using (var checkpoints = new LocalCheckpointStore(directory))
        {
            var refused = Assert.Throws<DirectoryInUseException>(() => new LocalCheckpointStore(directory));
            Assert.Contains(directory, refused.Message, StringComparison.Ordinal);
        }

        using var again = new LocalCheckpointStore(directory);
        string logDirectory = _directory.NewSubdirectory();
        using (var device = new LocalFileDevice(new LocalFileDeviceOptions { Directory = logDirectory }))
        {
            Assert.Throws<DirectoryInUseException>(
                () => new LocalFileDevice(new LocalFileDeviceOptions { Directory = logDirectory }));
        }

        using var reopened = new LocalFileDevice(new LocalFileDeviceOptions { Directory = logDirectory });
    }

    [Fact]
    public async Task A_directory_held_by_another_process_is_refused_and_released_when_that_process_is_killed()
    {
        string directory = _directory.NewSubdirectory();
        using (var holder = CrashHelperProcess.Start("run", directory, "1"))
        {
            await holder.WaitForLineAsync("running", TimeSpan.FromSeconds(60));
            StoreSettings settings = StoreOnDevice.Settings(Path.Combine(directory, "store"));
            var refused = Assert.Throws<DirectoryInUseException>(() => TestStores.Create(settings));
            Assert.Contains($"process {holder.ProcessId}", refused.Holder, StringComparison.Ordinal);
            holder.Kill();
        }

        // SIGKILL ran no disposal: the operating system released the lock with the process.
        using var verify = CrashHelperProcess.Start("verify", directory);
        int exitCode = await verify.WaitForExitAsync(TimeSpan.FromSeconds(60));
        Assert.True(exitCode == 0, $"the store did not open after its holder was killed ({exitCode}):{Environment.NewLine}{verify.Output}");
    }
}
