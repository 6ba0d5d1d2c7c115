using Microsoft.Extensions.Options;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// Checks <see cref="HybridKVOptions"/> when the host starts: each failure names the option, the value found and what
/// is allowed. The store's own settings are checked by <see cref="StoreSettings.Validate"/> on the settings the
/// options make, so that the two never disagree about a range.
/// </summary>
internal sealed class HybridKVOptionsValidator : IValidateOptions<HybridKVOptions>
{
    private const string Prefix = nameof(HybridKVOptions) + ".";

    public ValidateOptionsResult Validate(string? name, HybridKVOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new List<string>();
        if (string.IsNullOrWhiteSpace(options.Directory))
        {
            failures.Add($"{Prefix}{nameof(HybridKVOptions.Directory)} is '{options.Directory}': it must name the " +
                $"directory of the store's files (configuration key '{HybridKVOptions.DefaultSectionName}:" +
                $"{nameof(HybridKVOptions.Directory)}' by default).");
        }

        if (options.SessionPoolSize < 1 || options.SessionPoolSize > options.MaxSessions)
        {
            failures.Add($"{Prefix}{nameof(HybridKVOptions.SessionPoolSize)} is {options.SessionPoolSize}: it must " +
                $"be from 1 to {nameof(HybridKVOptions.MaxSessions)} ({options.MaxSessions}).");
        }

        if (options.CheckpointInterval < TimeSpan.FromMilliseconds(1))
        {
            failures.Add($"{Prefix}{nameof(HybridKVOptions.CheckpointInterval)} is {options.CheckpointInterval}: it " +
                "must be at least 1 ms.");
        }

        if (options.IndexCheckpointInterval < options.CheckpointInterval)
        {
            failures.Add($"{Prefix}{nameof(HybridKVOptions.IndexCheckpointInterval)} is " +
                $"{options.IndexCheckpointInterval}: it must be at least {nameof(HybridKVOptions.CheckpointInterval)} " +
                $"({options.CheckpointInterval}).");
        }

        if (options.CommitDelay < TimeSpan.Zero || options.CommitDelay > HybridKVOptions.MaxCommitDelay)
        {
            failures.Add($"{Prefix}{nameof(HybridKVOptions.CommitDelay)} is {options.CommitDelay}: it must be from " +
                $"zero to {HybridKVOptions.MaxCommitDelay}.");
        }

        if (failures.Count == 0)
        {
            // The rest are the store's settings: its validation names the setting, which has the option's name.
            try
            {
                StoreSettings settings = options.ToStoreSettings(loggerFactory: null);
                settings.Validate();
                bool canCheckpoint = settings.LogDirectory is not null ||
                    (settings.LogDevice is not null && (settings.CheckpointDirectory ?? (object?)settings.CheckpointStore) is not null);
                if (!canCheckpoint)
                {
                    failures.Add($"{Prefix}{nameof(HybridKVOptions.ConfigureStore)} left the store without a log " +
                        "directory, or a log device and a checkpoint place: a hosted store needs them to recover and " +
                        "to commit.");
                }
            }
            catch (ArgumentException error)
            {
                failures.Add($"{Prefix}{error.ParamName}: {error.Message}");
            }
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
