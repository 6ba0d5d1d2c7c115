using Microsoft.Extensions.Options;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// Checks <see cref="HybridKVOptions"/> when the host starts: each failure names the option, the value found and what
/// is allowed. The store's own settings are checked by <see cref="StoreSettings.Validate"/> on the settings the
/// options make, so that the two never disagree about a range.
/// </summary>
internal sealed class HybridKVOptionsValidator(string optionsTypeName = nameof(HybridKVOptions))
    : IValidateOptions<HybridKVOptions>
{
    // How failures name an option: the options type the user set it on, then the property.
    private readonly string _prefix = optionsTypeName + ".";

    // Where the hosting options come from by default, for the message about a missing directory.
    private readonly string _directoryHint = optionsTypeName == nameof(HybridKVOptions)
        ? $" (configuration key '{HybridKVOptions.DefaultSectionName}:{nameof(HybridKVOptions.Directory)}' by default)"
        : "";

    public ValidateOptionsResult Validate(string? name, HybridKVOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new List<string>();
        if (options.StorageProvider is { } provider)
        {
            if (options.Directory is not null)
            {
                failures.Add($"{_prefix}{nameof(HybridKVOptions.Directory)} is '{options.Directory}', but the store's " +
                    $"log and checkpoints go to {provider.Description} ({_prefix}{nameof(HybridKVOptions.StorageProvider)}): " +
                    $"set one place, not both{_directoryHint}.");
            }

            failures.AddRange(provider.Validate(options));
        }
        else if (string.IsNullOrWhiteSpace(options.Directory))
        {
            failures.Add($"{_prefix}{nameof(HybridKVOptions.Directory)} is '{options.Directory}': it must name the " +
                $"directory of the store's files{_directoryHint}, unless a storage provider (such as " +
                "UseAzureStorage()) places them elsewhere.");
        }

        if (options.SessionPoolSize < 1 || options.SessionPoolSize > options.MaxSessions)
        {
            failures.Add($"{_prefix}{nameof(HybridKVOptions.SessionPoolSize)} is {options.SessionPoolSize}: it must " +
                $"be from 1 to {nameof(HybridKVOptions.MaxSessions)} ({options.MaxSessions}).");
        }

        if (options.CheckpointInterval < TimeSpan.FromMilliseconds(1))
        {
            failures.Add($"{_prefix}{nameof(HybridKVOptions.CheckpointInterval)} is {options.CheckpointInterval}: it " +
                "must be at least 1 ms.");
        }

        if (options.IndexCheckpointInterval < options.CheckpointInterval)
        {
            failures.Add($"{_prefix}{nameof(HybridKVOptions.IndexCheckpointInterval)} is " +
                $"{options.IndexCheckpointInterval}: it must be at least {nameof(HybridKVOptions.CheckpointInterval)} " +
                $"({options.CheckpointInterval}).");
        }

        if (options.CommitDelay < TimeSpan.Zero || options.CommitDelay > HybridKVOptions.MaxCommitDelay)
        {
            failures.Add($"{_prefix}{nameof(HybridKVOptions.CommitDelay)} is {options.CommitDelay}: it must be from " +
                $"zero to {HybridKVOptions.MaxCommitDelay}.");
        }

        if (failures.Count == 0)
        {
            // The rest are the store's settings: its validation names the setting, which has the option's name.
            // A storage provider opens its device only when the host starts: until then a device of the same sector
            // size as the page blob's and the file device's (512 bytes) stands in, and the checkpoint store is the
            // provider's.
            using var standIn = options.StorageProvider is null ? null : new Devices.NullDevice();
            try
            {
                StoreSettings settings = options.ToStoreSettings(loggerFactory: null, standIn, checkpointStore: null);
                settings.Validate();
                bool canCheckpoint = settings.LogDirectory is not null ||
                    (settings.LogDevice is not null && (settings.CheckpointDirectory ??
                        (object?)settings.CheckpointStore ?? options.StorageProvider) is not null);
                if (!canCheckpoint)
                {
                    failures.Add($"{_prefix}{nameof(HybridKVOptions.ConfigureStore)} left the store without a log " +
                        "directory, or a log device and a checkpoint place: a hosted store needs them to recover and " +
                        "to commit.");
                }
            }
            catch (ArgumentException error)
            {
                failures.Add($"{_prefix}{error.ParamName}: {error.Message}");
            }
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
