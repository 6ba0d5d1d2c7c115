using HybridKV.Devices;

namespace HybridKV.Tests.Support;

/// <summary>Whether this machine's kernel lets a process set up an io_uring (some container sandboxes forbid it).</summary>
public static class IoUringSupport
{
    public static bool Available { get; } = Probe();

    private static bool Probe()
    {
        using IoUring? ring = IoUring.TryCreate(1, out _);
        return ring is not null;
    }
}
