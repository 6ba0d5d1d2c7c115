using System.Net.Sockets;
using System.Text;

namespace HybridKV.Server.Tests.Support;

/// <summary>An error reply.</summary>
public sealed record RespError(string Message);

/// <summary>
/// A bare RESP client over a socket, for what a client library would not send: raw and malformed bytes, pipelines
/// written in one piece, the HKV.* commands. Replies decode to string, long, null, <see cref="RespError"/> or object?[].
/// </summary>
public sealed class RespClient : IAsyncDisposable
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);
    private readonly TcpClient _client;
    private readonly NetworkStream _stream;
    private readonly byte[] _buffer = new byte[64 * 1024];
    private int _start;
    private int _end;

    private RespClient(TcpClient client)
    {
        _client = client;
        _stream = client.GetStream();
    }

    public static async Task<RespClient> ConnectAsync(int port)
    {
        var client = new TcpClient { NoDelay = true };
        await client.ConnectAsync("127.0.0.1", port);
        return new RespClient(client);
    }

    /// <summary>A command as a RESP array of bulk strings.</summary>
    public static byte[] Encode(params string[] command)
    {
        var text = new StringBuilder();
        text.Append('*').Append(command.Length).Append("\r\n");
        foreach (string argument in command)
        {
            text.Append('$').Append(Encoding.UTF8.GetByteCount(argument)).Append("\r\n").Append(argument).Append("\r\n");
        }

        return Encoding.UTF8.GetBytes(text.ToString());
    }

    public async Task SendAsync(byte[] bytes)
    {
        using var deadline = new CancellationTokenSource(Timeout);
        await _stream.WriteAsync(bytes, deadline.Token);
    }

    public async Task<object?> CallAsync(params string[] command)
    {
        await SendAsync(Encode(command));
        return await ReadAsync();
    }

    /// <summary>Closes the sending side: the server sees the end of the stream.</summary>
    public void ShutdownSend() => _client.Client.Shutdown(SocketShutdown.Send);

    /// <summary>Whether the server closed the connection: true once everything it sent was read and the stream ends.</summary>
    public async Task<bool> IsClosedByServerAsync()
    {
        try
        {
            return !await FillAsync();
        }
        catch (IOException)
        {
            // Reset by the server: closed as well.
            return true;
        }
    }

    public async Task<object?> ReadAsync()
    {
        string line = await ReadLineAsync();
        char type = line[0];
        string rest = line[1..];
        switch (type)
        {
            case '+':
                return rest;
            case '-':
                return new RespError(rest);
            case ':':
                return long.Parse(rest, System.Globalization.CultureInfo.InvariantCulture);
            case '_':
                return null;
            case '$':
                int length = int.Parse(rest, System.Globalization.CultureInfo.InvariantCulture);
                if (length < 0)
                {
                    return null;
                }

                byte[] bytes = await ReadExactAsync(length + 2);
                return Encoding.UTF8.GetString(bytes, 0, length);
            case '*':
            case '%':
                int count = int.Parse(rest, System.Globalization.CultureInfo.InvariantCulture);
                if (count < 0)
                {
                    return null;
                }

                var items = new object?[type == '%' ? 2 * count : count];
                for (int i = 0; i < items.Length; i++)
                {
                    items[i] = await ReadAsync();
                }

                return items;
            default:
                throw new InvalidDataException($"Unexpected reply type '{type}' in '{line}'.");
        }
    }

    private async Task<string> ReadLineAsync()
    {
        while (true)
        {
            int newline = Array.IndexOf(_buffer, (byte)'\n', _start, _end - _start);
            if (newline > _start && _buffer[newline - 1] == '\r')
            {
                string line = Encoding.UTF8.GetString(_buffer, _start, newline - 1 - _start);
                _start = newline + 1;
                return line;
            }

            if (!await FillAsync())
            {
                throw new EndOfStreamException("The server closed the connection.");
            }
        }
    }

    private async Task<byte[]> ReadExactAsync(int count)
    {
        var result = new byte[count];
        int copied = 0;
        while (copied < count)
        {
            if (_start == _end && !await FillAsync())
            {
                throw new EndOfStreamException("The server closed the connection.");
            }

            int take = Math.Min(count - copied, _end - _start);
            Array.Copy(_buffer, _start, result, copied, take);
            _start += take;
            copied += take;
        }

        return result;
    }

    private async Task<bool> FillAsync()
    {
        if (_start == _end)
        {
            _start = _end = 0;
        }
        else if (_end == _buffer.Length)
        {
            Array.Copy(_buffer, _start, _buffer, 0, _end - _start);
            _end -= _start;
            _start = 0;
        }

        using var deadline = new CancellationTokenSource(Timeout);
        int read = await _stream.ReadAsync(_buffer.AsMemory(_end), deadline.Token);
        _end += read;
        return read > 0;
    }

    public ValueTask DisposeAsync()
    {
        _client.Dispose();
        return ValueTask.CompletedTask;
    }
}
