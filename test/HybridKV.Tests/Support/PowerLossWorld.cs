using HybridKV.Checkpoints;
using HybridKV.Devices;

namespace HybridKV.Tests.Support;

/// <summary>How a power loss treats writes that were not made durable yet.</summary>
public enum PowerLossMode
{
    /// <summary>Every write since the last flush is lost.</summary>
    DropUnflushed,

    /// <summary>Each unflushed write survives whole, or not at all, at random.</summary>
    KeepRandomWrites,

    /// <summary>Each sector of each unflushed write survives, or not, at random: writes tear at sector boundaries.</summary>
    TearSectors,
}

/// <summary>
/// A machine whose storage loses power (issue 17, item 8). A SIGKILL keeps the page cache, so a killed process never
/// loses a completed write; power loss does. Here a log device (<see cref="Device"/>) keeps every write in a volatile
/// layer until <c>FlushAsync</c>, and a checkpoint store (<see cref="Checkpoints"/>) keeps a part volatile until its
/// stream is disposed (the local store fsyncs it then); labels, manifests and deletions are durable when they return, as
/// the local device and store make them (fsync, rename, directory fsync). <see cref="Arm"/> and <see cref="CutNow"/> freeze what survives
/// under one lock, so nothing the store does in between is half seen, and <see cref="AfterCut"/> is the next machine.
/// </summary>
public sealed class PowerLossWorld
{
    private readonly object _gate = new();
    private PowerLossWorld? _afterCut;
    private long _operations;
    private long _cutAt = -1;
    private PowerLossMode _mode;
    private Random _random = new(0);

    // Device: durable segments and the current contents (durable plus unflushed writes), and the unflushed writes in order.
    private readonly Dictionary<long, byte[]> _durableSegments;
    private readonly Dictionary<long, byte[]> _currentSegments;
    private readonly List<(long Segment, long Offset, byte[] Data)> _unflushed = new();
    private byte[]? _label;

    // Checkpoint store: durable parts and manifests, and parts still being written.
    private readonly Dictionary<(Guid Token, string Part), byte[]> _parts;
    private readonly Dictionary<Guid, byte[]> _manifests;
    private readonly HashSet<Guid> _tokens;
    private readonly Dictionary<(Guid Token, string Part), MemoryStream> _open = new();

    public const int SectorBytes = 512;
    public const long SegmentBytes = 1L << 16;

    public PowerLossWorld()
        : this(new(), null, new(), new(), new())
    {
    }

    private PowerLossWorld(Dictionary<long, byte[]> segments, byte[]? label, Dictionary<(Guid, string), byte[]> parts,
        Dictionary<Guid, byte[]> manifests, HashSet<Guid> tokens)
    {
        _durableSegments = segments;
        _currentSegments = segments.ToDictionary(s => s.Key, s => (byte[])s.Value.Clone());
        _label = label;
        _parts = parts;
        _manifests = manifests;
        _tokens = tokens;
        Device = new PowerLossDevice(this);
        Checkpoints = new PowerLossCheckpointStore(this);
    }

    public StorageDevice Device { get; }

    public CheckpointStore Checkpoints { get; }

    /// <summary>Whether the cut that made this machine came at an armed storage operation (not between two
    /// operations of a session), for the report.</summary>
    public bool CutInsideStorageOperation { get; private set; }

    /// <summary>Writes that were lost or torn by the cut, for the report.</summary>
    public int LostWrites { get; private set; }

    /// <summary>
    /// Arms the cut: the power goes just before the storage operation number <paramref name="afterOperations"/> (a
    /// write, flush, deletion, part, manifest or label) from now, or at <see cref="CutNow"/>, whichever comes first.
    /// </summary>
    public void Arm(long afterOperations, PowerLossMode mode, int seed)
    {
        lock (_gate)
        {
            _cutAt = _operations + afterOperations;
            _mode = mode;
            _random = new Random(seed);
        }
    }

    /// <summary>Whether the power is off: nothing the store does from now on reaches <see cref="AfterCut"/>.</summary>
    public bool IsCut
    {
        get
        {
            lock (_gate)
            {
                return _afterCut is not null;
            }
        }
    }

    /// <summary>The machine after the cut, once there was one.</summary>
    public PowerLossWorld? AfterCut
    {
        get
        {
            lock (_gate)
            {
                return _afterCut;
            }
        }
    }

    /// <summary>Cuts the power now, if it is still on; returns what survived.</summary>
    public PowerLossWorld CutNow()
    {
        lock (_gate)
        {
            return _afterCut ??= SurvivorsLocked();
        }
    }

    /// <summary>Counts a storage operation, cutting the power first when it is the armed one.</summary>
    private void TickLocked()
    {
        if (++_operations == _cutAt && _afterCut is null)
        {
            _afterCut = SurvivorsLocked();
            _afterCut.CutInsideStorageOperation = true;
        }
    }

    /// <summary>
    /// What survives: the durable state plus, by the armed mode, some of the volatile writes. The running store may go
    /// on writing to this world; none of it counts.
    /// </summary>
    private PowerLossWorld SurvivorsLocked()
    {
        PowerLossMode mode = _mode;
        Random random = _random;
        var segments = _durableSegments.ToDictionary(s => s.Key, s => (byte[])s.Value.Clone());
        int lost = 0;
        foreach ((long segment, long offset, byte[] data) in _unflushed)
        {
            if (!segments.TryGetValue(segment, out byte[]? target))
            {
                target = segments[segment] = new byte[SegmentBytes];
            }

            switch (mode)
            {
                case PowerLossMode.KeepRandomWrites when random.Next(2) == 0:
                    data.CopyTo(target, offset);
                    break;
                case PowerLossMode.TearSectors:
                    for (int sector = 0; sector < data.Length; sector += SectorBytes)
                    {
                        if (random.Next(2) == 0)
                        {
                            data.AsSpan(sector, SectorBytes).CopyTo(target.AsSpan((int)offset + sector));
                        }
                        else
                        {
                            lost++;
                        }
                    }

                    break;
                default:
                    lost++;
                    break;
            }
        }

        var parts = new Dictionary<(Guid, string), byte[]>(_parts);
        foreach (((Guid token, string part), MemoryStream open) in _open)
        {
            // A part whose stream was not disposed was never fsynced: any prefix of it may be on disk.
            byte[] written = open.ToArray();
            parts[(token, part)] = written[..random.Next(written.Length + 1)];
        }

        return new PowerLossWorld(segments, _label?.ToArray(), parts, new(_manifests), new(_tokens)) { LostWrites = lost };
    }

    private sealed class PowerLossDevice(PowerLossWorld world) : StorageDevice(SectorBytes, SegmentBytes)
    {
        protected override ValueTask WriteSegmentAsync(
            long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                byte[] data = source.ToArray();
                if (!world._currentSegments.TryGetValue(segment, out byte[]? current))
                {
                    current = world._currentSegments[segment] = new byte[SegmentBytes];
                }

                data.CopyTo(current, offset);
                world._unflushed.Add((segment, offset, data));
            }

            return ValueTask.CompletedTask;
        }

        protected override ValueTask ReadSegmentAsync(
            long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                if (world._currentSegments.TryGetValue(segment, out byte[]? current))
                {
                    current.AsSpan((int)offset, destination.Length).CopyTo(destination.Span);
                }
                else
                {
                    destination.Span.Clear();
                }
            }

            return ValueTask.CompletedTask;
        }

        protected override ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                if (world._afterCut is null)
                {
                    world._durableSegments.Remove(segment);
                    world._unflushed.RemoveAll(w => w.Segment == segment);
                }

                world._currentSegments.Remove(segment);
            }

            return ValueTask.CompletedTask;
        }

        protected override ValueTask FlushCoreAsync(CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                if (world._afterCut is null)
                {
                    foreach ((long segment, long offset, byte[] data) in world._unflushed)
                    {
                        if (!world._durableSegments.TryGetValue(segment, out byte[]? durable))
                        {
                            durable = world._durableSegments[segment] = new byte[SegmentBytes];
                        }

                        data.CopyTo(durable, offset);
                    }

                    world._unflushed.Clear();
                }
            }

            return ValueTask.CompletedTask;
        }

        protected override ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                return ValueTask.FromResult(world._label?.ToArray());
            }
        }

        protected override ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                world._label = label.ToArray();
            }

            return ValueTask.CompletedTask;
        }

        protected override ValueTask EraseCoreAsync(CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world._durableSegments.Clear();
                world._currentSegments.Clear();
                world._unflushed.Clear();
                world._label = null;
            }

            return ValueTask.CompletedTask;
        }
    }

    private sealed class PowerLossCheckpointStore(PowerLossWorld world) : CheckpointStore
    {
        public override Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                world._tokens.Add(token);
                var stream = new PartStream(world, token, part);
                world._open[(token, part)] = stream;
                return Task.FromResult<Stream>(stream);
            }
        }

        public override Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                return world._parts.TryGetValue((token, part), out byte[]? bytes)
                    ? Task.FromResult<Stream>(new MemoryStream(bytes, writable: false))
                    : Task.FromException<Stream>(new FileNotFoundException($"No part {Describe(token, part)}."));
            }
        }

        public override Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                world._tokens.Add(token);
                world._manifests[token] = manifest.ToArray();
            }

            return Task.CompletedTask;
        }

        public override Task<IReadOnlyList<Guid>> ListCommittedAsync(CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                return Task.FromResult<IReadOnlyList<Guid>>(world._manifests.Keys.ToList());
            }
        }

        public override Task<IReadOnlyList<Guid>> ListAllAsync(CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                return Task.FromResult<IReadOnlyList<Guid>>(world._tokens.ToList());
            }
        }

        public override Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                return world._manifests.TryGetValue(token, out byte[]? manifest)
                    ? Task.FromResult(manifest.ToArray())
                    : Task.FromException<byte[]>(new FileNotFoundException($"No manifest {Describe(token, null)}."));
            }
        }

        public override Task DeleteAsync(Guid token, CancellationToken cancellationToken)
        {
            lock (world._gate)
            {
                world.TickLocked();
                world._manifests.Remove(token);
                foreach ((Guid Token, string Part) key in world._parts.Keys.Where(k => k.Token == token).ToList())
                {
                    world._parts.Remove(key);
                }

                world._tokens.Remove(token);
            }

            return Task.CompletedTask;
        }

        public override string Describe(Guid token, string? part) => $"power-loss:{token}/{part}";
    }

    /// <summary>A part being written: durable once disposed (the local store fsyncs it then).</summary>
    private sealed class PartStream(PowerLossWorld world, Guid token, string part) : MemoryStream
    {
        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                lock (world._gate)
                {
                    world.TickLocked();
                    if (world._open.Remove((token, part)))
                    {
                        world._parts[(token, part)] = ToArray();
                    }
                }
            }

            base.Dispose(disposing);
        }
    }
}
