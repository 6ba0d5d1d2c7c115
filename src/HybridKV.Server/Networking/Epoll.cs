using System.Runtime.InteropServices;

namespace HybridKV.Server.Networking;

/// <summary>
/// The Linux calls of the server's own socket loop (<see cref="EpollLoop"/>): <c>epoll</c>, <c>eventfd</c> and
/// non-blocking <c>recv</c>/<c>send</c>. Linux on x64 and Arm64 only (<see cref="IsSupported"/>).
/// </summary>
internal static unsafe partial class Epoll
{
    public const int In = 0x001;
    public const int Out = 0x004;
    public const int Error = 0x008;
    public const int HangUp = 0x010;
    public const int ReadHangUp = 0x2000;

    public const int Add = 1;
    public const int Delete = 2;
    public const int Modify = 3;

    public const int CloseOnExec = 0x80000;
    public const int NonBlocking = 0x800;
    public const int DontWait = 0x40;
    public const int NoSignal = 0x4000;

    public const int Interrupted = 4;
    public const int WouldBlock = 11;

    /// <summary>Whether this machine's <c>epoll_event</c> layout is known: 12 bytes packed on x64, 16 on Arm64.</summary>
    public static bool IsSupported =>
        OperatingSystem.IsLinux() &&
        RuntimeInformation.ProcessArchitecture is Architecture.X64 or Architecture.Arm64;

    /// <summary>The size of one <c>epoll_event</c>.</summary>
    public static int EventSize => RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 12 : 16;

    private static int DataOffset => RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 4 : 8;

    /// <summary>Writes an <c>epoll_event</c> at <paramref name="destination"/>.</summary>
    public static void WriteEvent(byte* destination, int events, long data)
    {
        *(int*)destination = events;
        *(long*)(destination + DataOffset) = data;
    }

    /// <summary>The events and data of the <paramref name="index"/>th <c>epoll_event</c> of <paramref name="events"/>.</summary>
    public static (int Events, long Data) ReadEvent(byte* events, int index)
    {
        byte* item = events + (index * EventSize);
        return (*(int*)item, *(long*)(item + DataOffset));
    }

    /// <summary>Adds, modifies or deletes <paramref name="fd"/>'s interest; returns 0 or -1 (errno set).</summary>
    public static int Control(int epoll, int operation, int fd, int events, long data)
    {
        byte* item = stackalloc byte[16];
        WriteEvent(item, events, data);
        return Ctl(epoll, operation, fd, item);
    }

    [LibraryImport("libc", EntryPoint = "epoll_create1", SetLastError = true)]
    public static partial int Create(int flags);

    [LibraryImport("libc", EntryPoint = "epoll_ctl", SetLastError = true)]
    private static partial int Ctl(int epoll, int operation, int fd, byte* item);

    [LibraryImport("libc", EntryPoint = "epoll_wait", SetLastError = true)]
    public static partial int Wait(int epoll, byte* events, int maxEvents, int timeoutMilliseconds);

    [LibraryImport("libc", EntryPoint = "eventfd", SetLastError = true)]
    public static partial int EventFd(uint initial, int flags);

    [LibraryImport("libc", EntryPoint = "read", SetLastError = true)]
    public static partial nint Read(int fd, byte* buffer, nint count);

    [LibraryImport("libc", EntryPoint = "write", SetLastError = true)]
    public static partial nint Write(int fd, byte* buffer, nint count);

    [LibraryImport("libc", EntryPoint = "recv", SetLastError = true)]
    public static partial nint Receive(int fd, byte* buffer, nint length, int flags);

    [LibraryImport("libc", EntryPoint = "send", SetLastError = true)]
    public static partial nint Send(int fd, byte* buffer, nint length, int flags);

    [LibraryImport("libc", EntryPoint = "close", SetLastError = true)]
    public static partial int Close(int fd);
}
