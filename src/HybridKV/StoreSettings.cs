using System.Numerics;
using HybridKV.Devices;
using Microsoft.Extensions.Logging;

namespace HybridKV;

/// <summary>
/// How a store is sized and tuned. Every property has a sensible default; <see cref="Validate"/> (called by the store's
/// constructor) rejects each invalid value with an <see cref="ArgumentOutOfRangeException"/> that names the setting
/// and its allowed range.
/// </summary>
public sealed record StoreSettings
{
    /// <summary>The smallest allowed <see cref="IndexBuckets"/>.</summary>
    public const long MinIndexBuckets = 1;

    /// <summary>The largest allowed <see cref="IndexBuckets"/> (64 GiB of buckets).</summary>
    public const long MaxIndexBuckets = 1L << 30;

    /// <summary>The smallest allowed <see cref="PageSizeBits"/> (512-byte pages).</summary>
    public const int MinPageSizeBits = 9;

    /// <summary>The largest allowed <see cref="PageSizeBits"/> (1 GiB pages).</summary>
    public const int MaxPageSizeBits = 30;

    /// <summary>The largest allowed <see cref="MemorySizeBytes"/> (1 TiB).</summary>
    public const long MaxMemorySizeBytes = 1L << 40;

    /// <summary>The largest allowed <see cref="MaxSessions"/>.</summary>
    public const int MaxMaxSessions = 1 << 16;

    /// <summary>
    /// The number of 64-byte hash buckets, each holding up to seven hash chains before it overflows; a power of two
    /// from <see cref="MinIndexBuckets"/> to <see cref="MaxIndexBuckets"/>. Default 2^16 (4 MiB). Size it at about
    /// (number of keys) / 4 for short chains. This is the initial size: the index doubles online when its chains grow
    /// long (<see cref="IndexGrowthOverflowPercent"/>), up to <see cref="IndexMaxBuckets"/>. A store that recovers takes
    /// the recovered checkpoint's index, with the size it was written with, whatever this says.
    /// </summary>
    public long IndexBuckets { get; init; } = 1L << 16;

    /// <summary>
    /// Automatic index growth (FASTER appendix B): the index doubles, while operations continue, when the overflow
    /// buckets linked into it exceed this percentage of its primary buckets. From 0 (the index never grows on its own)
    /// to <see cref="MaxIndexGrowthOverflowPercent"/>. Default 50.
    /// </summary>
    public int IndexGrowthOverflowPercent { get; init; } = 50;

    /// <summary>The largest allowed <see cref="IndexGrowthOverflowPercent"/>.</summary>
    public const int MaxIndexGrowthOverflowPercent = 10_000;

    /// <summary>
    /// The most buckets the index grows to: a power of two from <see cref="IndexBuckets"/> to
    /// <see cref="MaxIndexBuckets"/>, or null (the default) for 64 times <see cref="IndexBuckets"/>, at most
    /// <see cref="MaxIndexBuckets"/>. An index recovered at this size or larger does not grow.
    /// </summary>
    public long? IndexMaxBuckets { get; init; }

    /// <summary>The effective <see cref="IndexMaxBuckets"/>.</summary>
    internal long IndexMaxBucketsOrDefault => IndexMaxBuckets ?? Math.Min(MaxIndexBuckets, IndexBuckets * 64);

    /// <summary>
    /// log2 of the log's page size, from <see cref="MinPageSizeBits"/> to <see cref="MaxPageSizeBits"/>. Default 22
    /// (4 MiB pages). A record must fit in one page.
    /// </summary>
    public int PageSizeBits { get; init; } = 22;

    /// <summary>
    /// The memory the log may use for page frames: a power of two of at least two pages and at most
    /// <see cref="MaxMemorySizeBytes"/>. Default 256 MiB.
    /// </summary>
    public long MemorySizeBytes { get; init; } = 1L << 28;

    /// <summary>
    /// The fraction of the in-memory log that is updated in place (the rest is the read-only region, FASTER §6.4);
    /// greater than 0 and at most 1. Default 0.9. At least one page is always mutable; with a device, at least one
    /// page is read-only (so that pages can be flushed and leave memory), whatever the fraction.
    /// </summary>
    public double MutableFraction { get; init; } = 0.9;

    /// <summary>
    /// Keeps data that fits in memory there while checkpoints and updates copy records to the tail: before a page
    /// leaves memory, its live records (those the index still leads to) are copied to the tail if they fill at most
    /// this fraction of it, or if the live records of the last memory's worth of pages, with them, fill at most this
    /// fraction of memory; otherwise the store is larger than memory and the page leaves with its records. From 0
    /// (off: pages always leave with their records) to <see cref="MaxMemoryCompactionMaxLiveFraction"/>.
    /// Default 0.8. Works in the background on the pages nearest the head; needs a log device.
    /// </summary>
    public double MemoryCompactionMaxLiveFraction { get; init; } = 0.8;

    /// <summary>The largest allowed <see cref="MemoryCompactionMaxLiveFraction"/>: a page of live records copied
    /// forward would free nothing.</summary>
    public const double MaxMemoryCompactionMaxLiveFraction = 0.9;

    /// <summary>
    /// The memory for the read cache (FASTER appendix D): copies of records that reads fetched from the device, so that
    /// a hot record that left memory is read from the device once, not on every access. Replaced with second chance
    /// (a copy read since it was last considered for replacement stays once more). Reads use it; updates never need
    /// to (they write newer records, which reads find first). From 0 (off) to <see cref="MaxMemorySizeBytes"/>; for
    /// stores of fixed-size keys and values only. Default 0: memory is the log's unless asked for.
    /// </summary>
    public long ReadCacheBytes { get; init; }

    /// <summary>
    /// Brings hot records back into memory: a read that finds its key's newest record on the device, when the key was
    /// read from the device recently too, appends a copy of the record at the tail (the same value; linked only if no
    /// update came meanwhile), so that the key's next reads find it in memory. A key read once is not copied, so a
    /// scan or a uniform workload's cold keys cost no writes. The log's memory then holds the records read often as
    /// well as those written lately; copies are written and compacted like other records. Ignored with a read cache
    /// (<see cref="ReadCacheBytes"/>), which keeps those records instead. Default true.
    /// </summary>
    public bool CopyHotReadsToTail { get; init; } = true;

    /// <summary>
    /// Automatic log compaction: the largest the log may grow relative to its live data before the oldest quarter of the
    /// part on the device is compacted (live records copied forward, the rest dropped with their segments once no kept
    /// checkpoint needs them). The live data is estimated from the index (fixed-size records: entries times the record size) or from
    /// what the last compaction kept (variable-length records). From
    /// <see cref="MinLogCompactionRatio"/> to <see cref="MaxLogCompactionRatio"/>, or 0 for no automatic compaction
    /// (<c>CompactAsync</c> still works). Default 2. Needs a log device; runs in the background, concurrently with
    /// operations and checkpoints.
    /// </summary>
    public double LogCompactionRatio { get; init; } = 2;

    /// <summary>The smallest non-zero <see cref="LogCompactionRatio"/>: below it compaction would run almost
    /// continuously.</summary>
    public const double MinLogCompactionRatio = 1.25;

    /// <summary>The largest <see cref="LogCompactionRatio"/>.</summary>
    public const double MaxLogCompactionRatio = 1000;

    /// <summary>
    /// No automatic compaction while the log (tail minus begin address) is smaller than this many bytes. Null (the
    /// default) means two log segments: segments are deleted whole, so compacting less frees no disk (and the segment
    /// size, <see cref="LogSegmentSizeBits"/>, is what disk use follows the live data by).
    /// </summary>
    public long? LogCompactionMinBytes { get; init; }

    /// <summary>
    /// Writer backpressure for automatic compaction: while a compaction runs and the log's part on the device (begin
    /// to head address: the disk it takes, the memory's pages lying above it) is larger than this many times the live
    /// data, less what the compaction is expected to copy (what the last one copied), and the log larger than the memory
    /// plus <see cref="LogCompactionMinBytes"/> (which no compaction can go below), operations that need a new page wait
    /// at the page turn, outside epoch protection, until the compaction has moved the begin address (they go on while
    /// it copies records), each page turn for at most <see cref="LogSizeLimitMaxWait"/> (then the page opens: a
    /// compaction that frees nothing slows writers to a page per wait but never stops them). This bounds the disk a
    /// writer faster than compaction can fill; with a limit, a compaction also takes no more than brings the log from
    /// the limit back to <see cref="LogCompactionRatio"/>. From <see cref="LogCompactionRatio"/> to
    /// <see cref="MaxLogCompactionRatio"/>, or 0 for never waiting. Default 2.5; ignored without automatic compaction.
    /// </summary>
    public double LogSizeLimitRatio { get; init; } = 2.5;

    /// <summary>
    /// The longest a page turn waits for a compaction (<see cref="LogSizeLimitRatio"/>), from zero to one minute.
    /// Default 1 s.
    /// </summary>
    public TimeSpan LogSizeLimitMaxWait { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>The effective <see cref="LogCompactionMinBytes"/>.</summary>
    internal long LogCompactionMinBytesOrDefault(long segmentSize) => LogCompactionMinBytes ?? (2 * segmentSize);

    /// <summary>
    /// The most sessions open at once (the size of the epoch table), from 1 to <see cref="MaxMaxSessions"/>.
    /// Default 128.
    /// </summary>
    public int MaxSessions { get; init; } = 128;

    /// <summary>
    /// The device that holds the log below the head address, owned by the caller (the store does not dispose it).
    /// With neither this nor <see cref="LogDirectory"/>, the whole log stays in memory.
    /// </summary>
    public StorageDevice? LogDevice { get; init; }

    /// <summary>
    /// A directory for the store's files: the log goes to <c>{LogDirectory}/log</c> on a <see cref="LocalFileDevice"/>
    /// that the store creates and disposes, and checkpoints to <c>{LogDirectory}/checkpoints</c> unless
    /// <see cref="CheckpointDirectory"/> or <see cref="CheckpointStore"/> says otherwise. Exclusive with <see cref="LogDevice"/>.
    /// </summary>
    public string? LogDirectory { get; init; }

    /// <summary>
    /// log2 of the segment file size when the store creates its own device (<see cref="LogDirectory"/>), from
    /// <see cref="MinLogSegmentSizeBits"/> to <see cref="MaxLogSegmentSizeBits"/>. Default 30 (1 GiB files).
    /// </summary>
    public int LogSegmentSizeBits { get; init; } = 30;

    /// <summary>The smallest allowed <see cref="LogSegmentSizeBits"/> (64 KiB).</summary>
    public const int MinLogSegmentSizeBits = 16;

    /// <summary>The largest allowed <see cref="LogSegmentSizeBits"/> (1 TiB).</summary>
    public const int MaxLogSegmentSizeBits = 40;

    /// <summary>
    /// A directory for checkpoints, written by a <see cref="Checkpoints.LocalCheckpointStore"/> the store creates.
    /// Defaults to <c>{LogDirectory}/checkpoints</c> when <see cref="LogDirectory"/> is set. Exclusive with
    /// <see cref="CheckpointStore"/>.
    /// </summary>
    public string? CheckpointDirectory { get; init; }

    /// <summary>Where checkpoints go, owned by the caller (the store does not dispose it).</summary>
    public Checkpoints.CheckpointStore? CheckpointStore { get; init; }

    /// <summary>
    /// How many of the newest checkpoints to keep, from 0 to <see cref="MaxCheckpointsToKeep"/>; older ones (except
    /// index checkpoints a kept one refers to) are deleted after each new one. 0 keeps every checkpoint. Default 3.
    /// </summary>
    public int CheckpointsToKeep { get; init; } = 3;

    /// <summary>The largest allowed <see cref="CheckpointsToKeep"/>.</summary>
    public const int MaxCheckpointsToKeep = 1000;

    /// <summary>
    /// Takes a checkpoint this often in the background (<see langword="null"/>, the default, for never): log-only, with
    /// a full one first and then every <see cref="IndexCheckpointEvery"/> checkpoints. A tick that finds nothing a
    /// checkpoint would make more durable (<see cref="HybridKVStore{TKey, TValue, TInput, TOutput, TContext, TFunctions}.HasUncommittedOperations"/>
    /// false: no operation since the last commit) takes none, so an idle store writes nothing. At least one millisecond.
    /// </summary>
    public TimeSpan? CheckpointInterval { get; init; }

    /// <summary>
    /// How periodic checkpoints capture the log. Default <see cref="Checkpoints.CheckpointMode.Auto"/>: a fold-over while
    /// the store fits in memory, a snapshot while operations miss memory and read the device.
    /// </summary>
    public Checkpoints.CheckpointMode PeriodicCheckpointMode { get; init; } = Checkpoints.CheckpointMode.Auto;

    /// <summary>
    /// Strict CPR (CPR §6.2.3): a commit point never excludes an operation. A session crosses its CPR point only once
    /// its pending operations have finished, the checkpoint waits for that (sessions must keep completing their
    /// pending operations), and sessions already past their CPR point hold back their updates meanwhile. Default
    /// false: relaxed CPR, where operations pending at a session's CPR point are listed in
    /// <see cref="Checkpoints.CommitPoint.ExcludedSerialNos"/> instead and no session ever waits.
    /// </summary>
    public bool StrictCpr { get; init; }

    /// <summary>Every how many periodic checkpoints one also checkpoints the index, from 1 to 1000. Default 8.</summary>
    public int IndexCheckpointEvery { get; init; } = 8;

    /// <summary>
    /// What the store does when its log device or checkpoint store already holds a store: require
    /// <c>RecoverAsync</c> before any use (<see cref="ExistingDataPolicy.Recover"/>, the default), or delete it and
    /// start empty (<see cref="ExistingDataPolicy.Delete"/>).
    /// </summary>
    public ExistingDataPolicy ExistingData { get; init; } = ExistingDataPolicy.Recover;

    /// <summary>Where the store logs; <see langword="null"/> for no logging.</summary>
    public ILoggerFactory? LoggerFactory { get; init; }

    /// <summary>
    /// Creates the store's meter (<c>HybridKV</c>, tagged <c>hybridkv.store.instance</c> with a number of its own per
    /// store), as a host's <see cref="System.Diagnostics.Metrics.IMeterFactory"/> does for its services;
    /// <see langword="null"/> (the default): the store creates the meter itself.
    /// </summary>
    public System.Diagnostics.Metrics.IMeterFactory? MeterFactory { get; init; }

    /// <summary>
    /// The clock that decides when values written with an <see cref="Expiration"/> expire (and from when a time to
    /// live counts). Default <see cref="System.TimeProvider.System"/>, the system's UTC clock; a clock set back makes
    /// an expired value that compaction has not dropped yet readable again.
    /// </summary>
    public TimeProvider TimeProvider { get; init; } = TimeProvider.System;

    /// <summary>The log's page size in bytes.</summary>
    public int PageSize => 1 << PageSizeBits;

    /// <summary>The number of page frames in memory.</summary>
    public int BufferPages => (int)(MemorySizeBytes >> PageSizeBits);

    /// <summary>
    /// The number of newest pages updated in place. With a device, at most all frames but one: a page must become
    /// read-only to be flushed and leave memory, or a full log would wait forever for room.
    /// </summary>
    public int MutablePages => Math.Clamp((int)(BufferPages * MutableFraction), 1,
        LogDirectory is null && LogDevice is null ? BufferPages : BufferPages - 1);

    /// <summary>Whether the log has a device: the precondition of checkpoints.</summary>
    private bool HasLogDevice => LogDirectory is not null || LogDevice is not null;

    /// <summary>Whether checkpoints have a place to go.</summary>
    private bool HasCheckpointStore => LogDirectory is not null || CheckpointDirectory is not null || CheckpointStore is not null;

    /// <summary>Settings that would be ignored are refused: the user meant them to take effect.</summary>
    private void ValidateCheckpointPlaces()
    {
        if (!HasLogDevice && (CheckpointDirectory is not null || CheckpointStore is not null))
        {
            string name = CheckpointDirectory is not null ? nameof(CheckpointDirectory) : nameof(CheckpointStore);
            throw new ArgumentException(
                $"{name} is set, but the log has no device, so there would be nothing to checkpoint it with: a " +
                $"checkpoint holds the log's bounds on its device. Set {nameof(LogDirectory)} or {nameof(LogDevice)} " +
                $"too, or leave {name} unset for a store in memory only.", name);
        }

        if (CheckpointInterval is { } interval && (!HasLogDevice || !HasCheckpointStore))
        {
            throw new ArgumentException(
                $"{nameof(CheckpointInterval)} is {interval}, but the store cannot take checkpoints: it needs a log " +
                $"device ({nameof(LogDirectory)} or {nameof(LogDevice)}) and a place for checkpoints " +
                $"({nameof(LogDirectory)}, {nameof(CheckpointDirectory)} or {nameof(CheckpointStore)}).",
                nameof(CheckpointInterval));
        }
    }

    /// <summary>
    /// The index is allocated (and zeroed) when the store is created and the log's frames as it fills: together they
    /// must fit in what the process may use, or the operating system ends the process without a message.
    /// </summary>
    internal void ValidateMemory(long availableBytes)
    {
        long indexBytes = IndexBuckets * 64;
        long needed = indexBytes + MemorySizeBytes;
        if (needed > availableBytes)
        {
            throw new ArgumentOutOfRangeException(
                indexBytes > availableBytes ? nameof(IndexBuckets) : nameof(MemorySizeBytes),
                needed,
                $"The index ({nameof(IndexBuckets)} = {IndexBuckets}, {indexBytes} bytes) and the log's memory " +
                $"({nameof(MemorySizeBytes)} = {MemorySizeBytes} bytes) need {needed} bytes, more than the " +
                $"{availableBytes} bytes this process may use (physical memory or its container's limit). Lower them.");
        }
    }

    /// <summary>Checks every setting.</summary>
    /// <exception cref="ArgumentOutOfRangeException">A setting is outside its allowed range, or the index and the log's
    /// memory need more than the process may use.</exception>
    /// <exception cref="ArgumentException">Settings conflict, or one would be ignored (a checkpoint place or interval
    /// without a log device).</exception>
    public void Validate()
    {
        if (TimeProvider is null)
        {
            throw new ArgumentNullException(nameof(TimeProvider),
                $"{nameof(TimeProvider)} must be a clock; leave it unset for {nameof(System.TimeProvider)}.System.");
        }

        if (IndexBuckets < MinIndexBuckets || IndexBuckets > MaxIndexBuckets || !BitOperations.IsPow2(IndexBuckets))
        {
            throw new ArgumentOutOfRangeException(
                nameof(IndexBuckets),
                IndexBuckets,
                $"{nameof(IndexBuckets)} must be a power of two from {MinIndexBuckets} to {MaxIndexBuckets}.");
        }

        if (IndexGrowthOverflowPercent < 0 || IndexGrowthOverflowPercent > MaxIndexGrowthOverflowPercent)
        {
            throw new ArgumentOutOfRangeException(
                nameof(IndexGrowthOverflowPercent),
                IndexGrowthOverflowPercent,
                $"{nameof(IndexGrowthOverflowPercent)} must be from 0 (no automatic growth) to " +
                $"{MaxIndexGrowthOverflowPercent}.");
        }

        if (IndexMaxBuckets is { } maxBuckets &&
            (maxBuckets < IndexBuckets || maxBuckets > MaxIndexBuckets || !BitOperations.IsPow2(maxBuckets)))
        {
            throw new ArgumentOutOfRangeException(
                nameof(IndexMaxBuckets),
                maxBuckets,
                $"{nameof(IndexMaxBuckets)} must be a power of two from {nameof(IndexBuckets)} ({IndexBuckets}) to " +
                $"{MaxIndexBuckets}, or null for the default.");
        }

        if (PageSizeBits < MinPageSizeBits || PageSizeBits > MaxPageSizeBits)
        {
            throw new ArgumentOutOfRangeException(
                nameof(PageSizeBits),
                PageSizeBits,
                $"{nameof(PageSizeBits)} must be from {MinPageSizeBits} to {MaxPageSizeBits} " +
                $"(pages of {1 << MinPageSizeBits} bytes to {1 << MaxPageSizeBits} bytes).");
        }

        long minMemory = 2L << PageSizeBits;
        if (MemorySizeBytes < minMemory || MemorySizeBytes > MaxMemorySizeBytes || !BitOperations.IsPow2(MemorySizeBytes))
        {
            throw new ArgumentOutOfRangeException(
                nameof(MemorySizeBytes),
                MemorySizeBytes,
                $"{nameof(MemorySizeBytes)} must be a power of two from {minMemory} (two pages of 2^{PageSizeBits} " +
                $"bytes) to {MaxMemorySizeBytes}.");
        }

        if (!(MutableFraction > 0 && MutableFraction <= 1))
        {
            throw new ArgumentOutOfRangeException(
                nameof(MutableFraction),
                MutableFraction,
                $"{nameof(MutableFraction)} must be greater than 0 and at most 1.");
        }

        if (ReadCacheBytes < 0 || ReadCacheBytes > MaxMemorySizeBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(ReadCacheBytes), ReadCacheBytes,
                $"{nameof(ReadCacheBytes)} must be from 0 (no read cache) to {MaxMemorySizeBytes}.");
        }

        if (!(MemoryCompactionMaxLiveFraction >= 0 && MemoryCompactionMaxLiveFraction <= MaxMemoryCompactionMaxLiveFraction))
        {
            throw new ArgumentOutOfRangeException(
                nameof(MemoryCompactionMaxLiveFraction),
                MemoryCompactionMaxLiveFraction,
                $"{nameof(MemoryCompactionMaxLiveFraction)} must be from 0 (off) to {MaxMemoryCompactionMaxLiveFraction}.");
        }

        if (!(LogCompactionRatio == 0 ||
              (LogCompactionRatio >= MinLogCompactionRatio && LogCompactionRatio <= MaxLogCompactionRatio)))
        {
            throw new ArgumentOutOfRangeException(
                nameof(LogCompactionRatio),
                LogCompactionRatio,
                $"{nameof(LogCompactionRatio)} must be 0 (no automatic compaction) or from {MinLogCompactionRatio} " +
                $"to {MaxLogCompactionRatio}.");
        }

        if (!(LogSizeLimitRatio == 0 || LogCompactionRatio == 0 ||
              (LogSizeLimitRatio >= LogCompactionRatio && LogSizeLimitRatio <= MaxLogCompactionRatio)))
        {
            throw new ArgumentOutOfRangeException(
                nameof(LogSizeLimitRatio),
                LogSizeLimitRatio,
                $"{nameof(LogSizeLimitRatio)} must be 0 (writers never wait) or from {nameof(LogCompactionRatio)} " +
                $"({LogCompactionRatio}) to {MaxLogCompactionRatio}.");
        }

        if (LogSizeLimitMaxWait < TimeSpan.Zero || LogSizeLimitMaxWait > TimeSpan.FromMinutes(1))
        {
            throw new ArgumentOutOfRangeException(
                nameof(LogSizeLimitMaxWait),
                LogSizeLimitMaxWait,
                $"{nameof(LogSizeLimitMaxWait)} must be from zero to one minute.");
        }

        if (LogCompactionMinBytes is < 0)
        {
            throw new ArgumentOutOfRangeException(
                nameof(LogCompactionMinBytes),
                LogCompactionMinBytes,
                $"{nameof(LogCompactionMinBytes)} must be at least 0, or null for the default.");
        }

        if (LogDevice is not null && LogDirectory is not null)
        {
            throw new ArgumentException(
                $"Set either {nameof(LogDevice)} or {nameof(LogDirectory)}, not both.", nameof(LogDirectory));
        }

        if (LogDirectory is not null && string.IsNullOrWhiteSpace(LogDirectory))
        {
            throw new ArgumentException($"{nameof(LogDirectory)} must name a directory.", nameof(LogDirectory));
        }

        if (LogSegmentSizeBits < MinLogSegmentSizeBits || LogSegmentSizeBits > MaxLogSegmentSizeBits ||
            LogSegmentSizeBits < PageSizeBits)
        {
            throw new ArgumentOutOfRangeException(
                nameof(LogSegmentSizeBits),
                LogSegmentSizeBits,
                $"{nameof(LogSegmentSizeBits)} must be from {Math.Max(MinLogSegmentSizeBits, PageSizeBits)} " +
                $"(at least one page) to {MaxLogSegmentSizeBits}.");
        }

        if (LogDevice is not null && LogDevice.SectorSize > PageSize)
        {
            throw new ArgumentOutOfRangeException(
                nameof(LogDevice),
                LogDevice.SectorSize,
                $"The log device's sector size ({LogDevice.SectorSize} bytes) must not exceed the page size " +
                $"({PageSize} bytes); raise {nameof(PageSizeBits)}.");
        }

        if (CheckpointStore is not null && CheckpointDirectory is not null)
        {
            throw new ArgumentException(
                $"Set either {nameof(CheckpointStore)} or {nameof(CheckpointDirectory)}, not both.",
                nameof(CheckpointDirectory));
        }

        if (CheckpointsToKeep < 0 || CheckpointsToKeep > MaxCheckpointsToKeep)
        {
            throw new ArgumentOutOfRangeException(nameof(CheckpointsToKeep), CheckpointsToKeep,
                $"{nameof(CheckpointsToKeep)} must be from 0 (keep all) to {MaxCheckpointsToKeep}.");
        }

        if (CheckpointInterval is { } interval && interval < TimeSpan.FromMilliseconds(1))
        {
            throw new ArgumentOutOfRangeException(nameof(CheckpointInterval), interval,
                $"{nameof(CheckpointInterval)} must be at least 1 ms, or null for no periodic checkpoints.");
        }

        if (IndexCheckpointEvery < 1 || IndexCheckpointEvery > 1000)
        {
            throw new ArgumentOutOfRangeException(nameof(IndexCheckpointEvery), IndexCheckpointEvery,
                $"{nameof(IndexCheckpointEvery)} must be from 1 to 1000.");
        }

        if (!Enum.IsDefined(PeriodicCheckpointMode))
        {
            throw new ArgumentOutOfRangeException(nameof(PeriodicCheckpointMode), PeriodicCheckpointMode,
                $"{nameof(PeriodicCheckpointMode)} must be {nameof(Checkpoints.CheckpointMode.FoldOver)}, " +
                $"{nameof(Checkpoints.CheckpointMode.Snapshot)} or {nameof(Checkpoints.CheckpointMode.Auto)}.");
        }

        if (!Enum.IsDefined(ExistingData))
        {
            throw new ArgumentOutOfRangeException(nameof(ExistingData), ExistingData,
                $"{nameof(ExistingData)} must be {nameof(ExistingDataPolicy.Recover)} or {nameof(ExistingDataPolicy.Delete)}.");
        }

        ValidateCheckpointPlaces();
        ValidateMemory(GC.GetGCMemoryInfo().TotalAvailableMemoryBytes);

        if (MaxSessions < 1 || MaxSessions > MaxMaxSessions)
        {
            throw new ArgumentOutOfRangeException(
                nameof(MaxSessions),
                MaxSessions,
                $"{nameof(MaxSessions)} must be from 1 to {MaxMaxSessions}.");
        }
    }
}
