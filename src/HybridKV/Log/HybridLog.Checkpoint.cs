using System.Diagnostics;
using System.Runtime.InteropServices;
using HybridKV.Epochs;

namespace HybridKV.Log;

/// <summary>What checkpoints and recovery need from the log: a copy of in-memory pages, and restored offsets.</summary>
internal sealed unsafe partial class HybridLog
{
    /// <summary>
    /// Copies the bytes of the log in [<paramref name="from"/>, <paramref name="from"/> + destination length) from
    /// memory, if they are all still in memory. The caller is protected by <paramref name="callerEntry"/>, so the frame
    /// cannot be reused while it copies.
    /// </summary>
    /// <returns>Whether the bytes were in memory (otherwise they are on the device, below the head).</returns>
    public bool TryCopyFromMemory(long from, Span<byte> destination, int callerEntry)
    {
        Debug.Assert(_epoch.IsProtected(callerEntry), "Copying a frame needs epoch protection.");
        Debug.Assert((from >> _pageSizeBits) == ((from + destination.Length - 1) >> _pageSizeBits), "Within one page.");
        // The head is page-aligned except on the first page, which starts at FirstValid but is in memory all the same.
        if ((from & ~_offsetMask) < (HeadAddress & ~_offsetMask))
        {
            return false;
        }

        byte* frame = (byte*)_frames[(from >> _pageSizeBits) & _frameMask];
        new ReadOnlySpan<byte>(frame + (from & _offsetMask), destination.Length).CopyTo(destination);
        return true;
    }

    /// <summary>
    /// Sets up a freshly created, unused log as recovery found it (CPR §6.4): everything below
    /// <paramref name="tailAddress"/> is on the device and read-only, and the tail continues from there. The bytes of
    /// the tail's page below the tail, <paramref name="tailPagePrefix"/>, are loaded into memory, so that the page can
    /// be completed and flushed again.
    /// </summary>
    public void RestoreForRecovery(long beginAddress, long tailAddress, ReadOnlySpan<byte> tailPagePrefix)
    {
        Debug.Assert(TailAddress == LogAddress.FirstValid && _device is not null, "Only a fresh log with a device.");
        Debug.Assert(tailPagePrefix.Length == (int)(tailAddress & _offsetMask), "The prefix ends at the tail.");
        long tailPage = tailAddress >> _pageSizeBits;
        long pageStart = tailPage << _pageSizeBits;

        PrepareFrame(tailPage);
        tailPagePrefix.CopyTo(new Span<byte>((byte*)_frames[tailPage & _frameMask], _pageSize));

        _beginAddress = beginAddress;
        _headAddress = _safeHeadAddress = Math.Max(beginAddress, pageStart);
        _readOnlyAddress = _safeReadOnlyAddress = tailAddress;
        _flushTracker = new FlushTracker(tailAddress);
        Volatile.Write(ref _tail.Word, TailWord(tailPage, (int)(tailAddress & _offsetMask)));
        LightEpoch.FlushProtectionStores();
    }
}
