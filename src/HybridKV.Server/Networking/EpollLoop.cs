using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace HybridKV.Server.Networking;

/// <summary>
/// A thread that waits on one <c>epoll</c> set for the sockets registered with it and, when one is readable,
/// receives once into its connection's input pipe, whose reader (the connection's loop) runs there and then.
/// </summary>
/// <remarks>
/// Why not <see cref="Socket.ReceiveAsync(Memory{byte}, SocketFlags, CancellationToken)"/>: .NET tries every receive
/// at once before it waits for readiness, and with one request per round trip (pipeline 1) the next request is never
/// there yet, so every reply was followed by a <c>recvfrom</c> that returned <c>EAGAIN</c>: two receives per request
/// against redis-server's one read, on a machine the clients share (bench/README.md). Here a socket is received from
/// only when <c>epoll</c> reported it readable (level-triggered, so a receive that left data gets another report).
/// </remarks>
internal sealed unsafe class EpollLoop : IDisposable
{
    private const int MaxEvents = 256;

    // The wake-up eventfd's id in epoll data; sockets count from 1.
    private const long WakeId = 0;

    private readonly int _epoll;
    private readonly int _wake;
    private readonly Thread _thread;
    private readonly ConcurrentDictionary<long, EpollSocket> _sockets = new();
    private readonly long _busyPollTicks;
    private long _nextId;

    // Written by the loop's thread only.
    private long _sleeps;
    private volatile bool _stopping;

    /// <param name="name">The thread's name.</param>
    /// <param name="busyPoll">How long the loop polls, after handling what arrived, before it sleeps
    /// (<see cref="Hosting.RespServerOptions.BusyPollMicroseconds"/>).</param>
    public EpollLoop(string name, TimeSpan busyPoll)
    {
        _busyPollTicks = (long)(busyPoll.TotalSeconds * Stopwatch.Frequency);
        _epoll = Epoll.Create(Epoll.CloseOnExec);
        if (_epoll < 0)
        {
            throw new SocketException(Marshal.GetLastPInvokeError());
        }

        _wake = Epoll.EventFd(0, Epoll.NonBlocking | Epoll.CloseOnExec);
        if (_wake < 0 || Epoll.Control(_epoll, Epoll.Add, _wake, Epoll.In, WakeId) != 0)
        {
            int error = Marshal.GetLastPInvokeError();
            if (_wake >= 0)
            {
                Epoll.Close(_wake);
            }

            Epoll.Close(_epoll);
            throw new SocketException(error);
        }

        _thread = new Thread(Run) { IsBackground = true, Name = name };
        _thread.Start();
    }

    /// <summary>An id for a socket to register: taken first, because the socket may be reported (on this loop's
    /// thread) as soon as it is registered, and must know its id by then to leave the set.</summary>
    public long NewId() => Interlocked.Increment(ref _nextId);

    /// <summary>Adds <paramref name="socket"/> to the set under <paramref name="id"/> (from <see cref="NewId"/>) with
    /// <paramref name="events"/> of interest.</summary>
    public void Register(long id, EpollSocket socket, int fd, int events)
    {
        _sockets[id] = socket;
        if (Epoll.Control(_epoll, Epoll.Add, fd, events, id) != 0)
        {
            int error = Marshal.GetLastPInvokeError();
            _sockets.TryRemove(id, out _);
            throw new SocketException(error);
        }
    }

    /// <summary>Changes the events a registered socket is watched for (callable from any thread).</summary>
    public void Modify(long id, int fd, int events)
    {
        if (!_stopping)
        {
            Epoll.Control(_epoll, Epoll.Modify, fd, events, id);
        }
    }

    /// <summary>Removes a socket before it is closed; an event already returned for it is then ignored.</summary>
    public void Unregister(long id, int fd)
    {
        if (_sockets.TryRemove(id, out _) && !_stopping)
        {
            Epoll.Control(_epoll, Epoll.Delete, fd, 0, id);
        }
    }

    private void Run()
    {
        byte* events = (byte*)NativeMemory.Alloc((nuint)(MaxEvents * Epoll.EventSize));
        try
        {
            while (!_stopping)
            {
                int count = WaitForEvents(events);
                if (count < 0)
                {
                    if (Marshal.GetLastPInvokeError() == Epoll.Interrupted)
                    {
                        continue;
                    }

                    return;
                }

                for (int i = 0; i < count; i++)
                {
                    (int flags, long id) = Epoll.ReadEvent(events, i);
                    if (id == WakeId)
                    {
                        long value;
                        Epoll.Read(_wake, (byte*)&value, sizeof(long));
                    }
                    else if (_sockets.TryGetValue(id, out EpollSocket? socket))
                    {
                        socket.OnEvents(flags);
                    }
                }
            }
        }
        finally
        {
            NativeMemory.Free(events);
            // The thread owns the set: a connection that ends on it may stop the server, and its loops, from here.
            Epoll.Close(_wake);
            Epoll.Close(_epoll);
        }
    }

    /// <summary>
    /// The next events: polled for up to the busy-poll time, then waited for. At one request per round trip the next
    /// request usually arrives within microseconds of the last reply, and waking a loop that had gone to sleep took
    /// longer than serving the request (its processor had gone idle: on a virtual machine, halted): a loop that polled
    /// for 50 µs first served 8-30 % more such requests (bench/README.md).
    /// </summary>
    private int WaitForEvents(byte* events)
    {
        int count = 0;
        if (_busyPollTicks > 0)
        {
            long deadline = Stopwatch.GetTimestamp() + _busyPollTicks;
            while ((count = Epoll.Wait(_epoll, events, MaxEvents, 0)) == 0 && Stopwatch.GetTimestamp() < deadline)
            {
            }
        }

        if (count == 0)
        {
            Volatile.Write(ref _sleeps, _sleeps + 1);
            count = Epoll.Wait(_epoll, events, MaxEvents, -1);
        }

        return count;
    }

    /// <summary>How many times the loop has gone to sleep in <c>epoll_wait</c> (for tests).</summary>
    internal long Sleeps => Volatile.Read(ref _sleeps);

    /// <summary>Stops the thread, which closes the set (the sockets are the connections' to close); waits for it
    /// unless called on it (the last connection's end, run on the loop, may be what stops the server).</summary>
    public void Dispose()
    {
        if (_stopping)
        {
            return;
        }

        _stopping = true;
        long one = 1;
        Epoll.Write(_wake, (byte*)&one, sizeof(long));
        if (Thread.CurrentThread != _thread)
        {
            _thread.Join();
        }
    }
}
