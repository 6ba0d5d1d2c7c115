using System.Buffers;
using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using System.Text;
using HybridKV.Server.Networking;

namespace HybridKV.Server.Tests;

/// <summary>The server's own epoll loops (Linux, plain connections): what a socket received, and its replies.</summary>
[Trait("Category", "Server")]
public sealed class EpollSocketTests
{
    [Fact]
    public async Task A_client_that_sent_and_closed_before_its_socket_was_registered_still_gets_the_reply()
    {
        // Registered with its request and end already there, a socket is reported at once, on the loop's thread, while
        // it is still being set up. Its end was received and its id not yet known, so it stayed in the set, was
        // reported again, failed, and was closed before the connection replied (the malformed-request tests lost
        // their replies that way in about a third of full runs).
        Assert.True(Epoll.IsSupported, "the server's tests run on Linux (x64 or Arm64)");
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(16);
        using var loop = new EpollLoop("test loop", TimeSpan.Zero);
        for (int i = 0; i < 200; i++)
        {
            using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            await client.ConnectAsync(listener.LocalEndPoint!);
            Socket accepted = await listener.AcceptAsync();
            await client.SendAsync("PING"u8.ToArray());
            client.Shutdown(SocketShutdown.Send);
            // Until the request has arrived (the end follows it on loopback): the race is with a socket ready at once.
            Assert.True(accepted.Poll(TimeSpan.FromSeconds(30), SelectMode.SelectRead));

            var polled = new EpollSocket(loop, accepted, maxRequestBytes: 1 << 20);
            ReadResult read = await polled.Input.ReadAsync();
            while (!read.IsCompleted)
            {
                polled.Input.AdvanceTo(read.Buffer.Start, read.Buffer.End);
                read = await polled.Input.ReadAsync();
            }

            Assert.Equal("PING", Encoding.ASCII.GetString(read.Buffer.ToArray()));
            polled.Input.AdvanceTo(read.Buffer.End);
            await polled.Output.WriteAsync("PONG"u8.ToArray());
            await polled.Output.DisposeAsync();

            var reply = new byte[8];
            int received = 0;
            int n;
            while ((n = await client.ReceiveAsync(reply.AsMemory(received))) > 0)
            {
                received += n;
            }

            Assert.Equal("PONG", Encoding.ASCII.GetString(reply, 0, received));
        }
    }

    [Theory]
    [InlineData(0)]
    [InlineData(2_000)]
    public async Task A_loop_serves_one_request_per_round_trip_and_sleeps_once_nothing_arrives(int busyPollMicroseconds)
    {
        Assert.True(Epoll.IsSupported, "the server's tests run on Linux (x64 or Arm64)");
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        using var loop = new EpollLoop("test loop", TimeSpan.FromMicroseconds(busyPollMicroseconds));
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await client.ConnectAsync(listener.LocalEndPoint!);
        var polled = new EpollSocket(loop, await listener.AcceptAsync(), maxRequestBytes: 1 << 20);
        var reply = new byte[4];
        for (int i = 0; i < 100; i++)
        {
            long sleepsBefore = loop.Sleeps;
            await client.SendAsync("PING"u8.ToArray());
            ReadResult read = await polled.Input.ReadAsync();
            // The pipe's reader continues inline on the loop's thread, which could not sleep while this test waits on it.
            await Task.Yield();
            Assert.Equal("PING", Encoding.ASCII.GetString(read.Buffer.ToArray()));
            polled.Input.AdvanceTo(read.Buffer.End);
            await polled.Output.WriteAsync("PONG"u8.ToArray());
            int received = 0;
            while (received < reply.Length)
            {
                received += await client.ReceiveAsync(reply.AsMemory(received));
            }

            Assert.Equal("PONG", Encoding.ASCII.GetString(reply));
            // Nothing more arrives: the loop polls for its time at most, then sleeps in epoll_wait (a loop that kept
            // polling would never get here).
            Assert.True(SpinWait.SpinUntil(() => loop.Sleeps > sleepsBefore, TimeSpan.FromSeconds(30)),
                $"the loop went on polling after request {i}");
        }

        await polled.Output.DisposeAsync();
    }
}
