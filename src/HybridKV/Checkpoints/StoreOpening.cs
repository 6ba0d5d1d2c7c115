using HybridKV.Devices;
using HybridKV.Diagnostics;
using Microsoft.Extensions.Logging;

namespace HybridKV.Checkpoints;

/// <summary>
/// What a store finds when it opens its log device and checkpoint store: nothing (a new log starts, and its label is
/// written), or a store (which must be recovered before use, unless <see cref="ExistingDataPolicy.Delete"/> says to
/// delete it). A store of other types, geometry, hash or format is refused here, before anything on disk changes.
/// </summary>
internal static class StoreOpening
{
    /// <summary>The store's identity, and why it must be recovered before use (null when it need not).</summary>
    public sealed record Outcome(StoreIdentity Identity, string? RecoveryRequired);

    /// <exception cref="InvalidOperationException">The device's log was written by a store of other types, geometry,
    /// hash function or format.</exception>
    /// <exception cref="InvalidDataException">The device's label is damaged, or the device holds an unlabeled log.</exception>
    public static Outcome Open(
        StorageDevice? device, CheckpointCatalog? catalog, StoreIdentity expected, ExistingDataPolicy policy, ILogger logger)
    {
        if (device is null)
        {
            return new Outcome(expected, null);
        }

        if (policy == ExistingDataPolicy.Delete)
        {
            int deleted = DeleteEverything(device, catalog);
            StoreIdentity fresh = StartLog(device, expected, logger);
            StoreLog.ExistingDataDeleted(logger, device, deleted, fresh.LogId);
            return new Outcome(fresh, null);
        }

        StoreIdentity? found = ReadLabel(device);
        int checkpoints = catalog is null ? 0 : Wait(catalog.Store.ListCommittedAsync(CancellationToken.None)).Count;
        if (found is null)
        {
            if (checkpoints == 0)
            {
                return new Outcome(StartLog(device, expected, logger), null);
            }

            // Recovery reports what is wrong: these checkpoints belong to a log this device does not hold.
            return new Outcome(expected with { LogId = Guid.NewGuid() },
                $"{catalog!.Store} holds {checkpoints} checkpoint(s), but the log device {device} holds no log");
        }

        IReadOnlyList<string> differences = expected.DifferencesFrom(found, "this store", $"the log on {device}");
        if (differences.Count > 0)
        {
            throw new InvalidOperationException(
                $"The log on {device} (log {found.LogId}) was written by a store that differs from this one, so its " +
                $"bytes would be misread: {string.Join("; ", differences)}. Open it with the settings and types it was " +
                "written with; nothing was changed.");
        }

        StoreIdentity identity = expected with { LogId = found.LogId };
        if (catalog is null)
        {
            // Without checkpoints nothing of this log was ever durable: it only held evicted pages of a past run.
            Wait(device.EraseAsync().AsTask());
            WriteLabel(device, identity);
            return new Outcome(identity, null);
        }

        StoreLog.ExistingLogFound(logger, identity.LogId, device);
        return new Outcome(identity, $"the log device {device} holds log {identity.LogId}" +
                                     (checkpoints > 0 ? $" and {catalog.Store} holds {checkpoints} checkpoint(s)" : ""));
    }

    /// <summary>Erases the device's log, which no committed checkpoint holds, and labels it again.</summary>
    public static async Task EraseUncommittedAsync(
        StorageDevice device, StoreIdentity identity, ILogger logger, CancellationToken cancellationToken)
    {
        await device.EraseAsync(cancellationToken).ConfigureAwait(false);
        await device.WriteLabelAsync(Label(identity), cancellationToken).ConfigureAwait(false);
        StoreLog.UncommittedLogErased(logger, identity.LogId, device);
    }

    private static StoreIdentity StartLog(StorageDevice device, StoreIdentity expected, ILogger logger)
    {
        StoreIdentity identity = expected with { LogId = Guid.NewGuid() };
        WriteLabel(device, identity);
        StoreLog.LogStarted(logger, identity.LogId, device);
        return identity;
    }

    private static StoreIdentity? ReadLabel(StorageDevice device)
    {
        byte[]? label = Wait(device.ReadLabelAsync().AsTask());
        if (label is null)
        {
            return null;
        }

        return ChecksummedJson.TryUnwrap<StoreIdentity>(label, CheckpointMetadata.JsonOptions, out string? problem) ??
               throw new InvalidDataException(
                   $"The label of the log device {device} is damaged ({problem}): it cannot say which log the device " +
                   "holds or how to read it. Restore it from a backup, or delete the store (StoreSettings.ExistingData " +
                   "= Delete) to start empty.");
    }

    private static void WriteLabel(StorageDevice device, StoreIdentity identity) =>
        Wait(device.WriteLabelAsync(Label(identity)).AsTask());

    /// <summary>The label's bytes: the identity as checksummed JSON.</summary>
    private static byte[] Label(StoreIdentity identity) => ChecksummedJson.Wrap(identity, CheckpointMetadata.JsonOptions);

    private static int DeleteEverything(StorageDevice device, CheckpointCatalog? catalog)
    {
        int deleted = 0;
        if (catalog is not null)
        {
            foreach (Guid token in Wait(catalog.Store.ListAllAsync(CancellationToken.None)))
            {
                Wait(catalog.DeleteAsync(token, CancellationToken.None));
                deleted++;
            }
        }

        Wait(device.EraseAsync().AsTask());
        return deleted;
    }

    // The store's constructor is synchronous; local devices and checkpoint stores complete these at once, and none of
    // them needs the caller's synchronization context (every await inside uses ConfigureAwait(false)).
    private static T Wait<T>(Task<T> task) => task.GetAwaiter().GetResult();

    private static void Wait(Task task) => task.GetAwaiter().GetResult();
}
