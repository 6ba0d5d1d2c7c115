using System.Buffers;
using System.Text;
using HybridKV.Sessions;

namespace HybridKV;

/// <summary>
/// The operations of a session whose keys (and values) are <see cref="VarBytes"/>, taking spans, memory and UTF-8
/// string keys. Each pins what it is given for as long as the store may read it.
/// </summary>
/// <remarks>
/// The synchronous methods behave like the session's own: a read or delete whose record is on the device returns
/// <see cref="Status.Pending"/>, except the reads into a buffer or pooled memory, which wait for the device inside
/// the call. A key that is a <see cref="string"/> is stored as its UTF-8 bytes.
/// </remarks>
public static class VarBytesSessionExtensions
{
    private const int StackKeyBytes = 256;

    /// <summary>Inserts or overwrites a value, which expires as <paramref name="expiration"/> says (default never).</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="ArgumentOutOfRangeException">The record would be larger than a page.</exception>
    public static unsafe Status Upsert<TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        ReadOnlySpan<byte> value,
        Expiration expiration = default)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        fixed (byte* valueBytes = value)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            var valueArgument = new VarBytes(valueBytes, value.Length);
            return session.Upsert(in keyArgument, in valueArgument, expiration);
        }
    }

    /// <summary>Inserts or overwrites the value of a UTF-8 string key, which expires as <paramref name="expiration"/>
    /// says (default never).</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="ArgumentOutOfRangeException">The record would be larger than a page.</exception>
    public static unsafe Status Upsert<TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, TOutput, TContext, TFunctions> session,
        string key,
        ReadOnlySpan<byte> value,
        Expiration expiration = default)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, TOutput, TContext>
    {
        using var utf8 = new Utf8Key(key, stackalloc byte[StackKeyBytes]);
        return session.Upsert(utf8.Bytes, value, expiration);
    }

    /// <summary>Inserts or overwrites a fixed-size value under a byte-sequence key.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    public static unsafe Status Upsert<TValue, TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        in TValue value)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            return session.Upsert(in keyArgument, in value);
        }
    }

    /// <summary>
    /// Reads a value into <paramref name="destination"/>, waiting for the device if the record is not in memory.
    /// </summary>
    /// <param name="session">The session.</param>
    /// <param name="key">The key.</param>
    /// <param name="destination">Where the value is copied, if it fits.</param>
    /// <param name="valueLength">The value's length; if it is more than <paramref name="destination"/>'s, nothing
    /// was copied: read again with a buffer at least this long.</param>
    /// <returns><see cref="Status.Ok"/> or <see cref="Status.NotFound"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    public static unsafe Status Read<TInput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, VarBytesOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        Span<byte> destination,
        out int valueLength)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, VarBytesOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        fixed (byte* destinationBytes = destination)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            VarBytesOutput output = VarBytesOutput.ToBuffer(destinationBytes, destination.Length);
            Status status = session.ReadAndWait(in keyArgument, default!, ref output, default!);
            valueLength = status == Status.Ok ? output.Length : 0;
            return status;
        }
    }

    /// <summary>Reads the value of a UTF-8 string key into <paramref name="destination"/>, waiting for the device.</summary>
    /// <param name="session">The session.</param>
    /// <param name="key">The key.</param>
    /// <param name="destination">Where the value is copied, if it fits.</param>
    /// <param name="valueLength">The value's length; if it is more than <paramref name="destination"/>'s, nothing
    /// was copied.</param>
    /// <returns><see cref="Status.Ok"/> or <see cref="Status.NotFound"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    public static unsafe Status Read<TInput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, VarBytesOutput, TContext, TFunctions> session,
        string key,
        Span<byte> destination,
        out int valueLength)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, VarBytesOutput, TContext>
    {
        using var utf8 = new Utf8Key(key, stackalloc byte[StackKeyBytes]);
        return session.Read(utf8.Bytes, destination, out valueLength);
    }

    /// <summary>Reads a value into pooled memory, waiting for the device if the record is not in memory.</summary>
    /// <param name="session">The session.</param>
    /// <param name="key">The key.</param>
    /// <param name="value">The value, exactly its length, when found; dispose it to return it to the pool.</param>
    /// <returns><see cref="Status.Ok"/> or <see cref="Status.NotFound"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    public static unsafe Status Read<TInput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, VarBytesOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        out IMemoryOwner<byte>? value)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, VarBytesOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            VarBytesOutput output = default;
            Status status = session.ReadAndWait(in keyArgument, default!, ref output, default!);
            value = status == Status.Ok ? output.Memory : null;
            return status;
        }
    }

    /// <summary>Reads the value of a UTF-8 string key into pooled memory, waiting for the device.</summary>
    /// <param name="session">The session.</param>
    /// <param name="key">The key.</param>
    /// <param name="value">The value when found; dispose it to return it to the pool.</param>
    /// <returns><see cref="Status.Ok"/> or <see cref="Status.NotFound"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    public static unsafe Status Read<TInput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, VarBytesOutput, TContext, TFunctions> session,
        string key,
        out IMemoryOwner<byte>? value)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, VarBytesOutput, TContext>
    {
        using var utf8 = new Utf8Key(key, stackalloc byte[StackKeyBytes]);
        return session.Read(utf8.Bytes, out value);
    }

    /// <summary>Reads a key with the session's own output type, as <c>Read(in key, ref output)</c> does.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/> or <see cref="Status.Pending"/>.</returns>
    public static unsafe Status Read<TValue, TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        ref TOutput output)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            return session.Read(in keyArgument, ref output);
        }
    }

    /// <summary>Read-modify-write of a byte-sequence key.</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.Pending"/> when it finishes in CompletePending.</returns>
    public static unsafe Status RMW<TValue, TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        in TInput input)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            return session.RMW(in keyArgument, in input);
        }
    }

    /// <summary>Read-modify-write with a byte-sequence input (for <see cref="VarBytesFunctions"/>: an append).</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.Pending"/> when it finishes in CompletePending.</returns>
    /// <exception cref="ArgumentOutOfRangeException">The new record would be larger than a page.</exception>
    public static unsafe Status RMW<TValue, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, VarBytes, TOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key,
        ReadOnlySpan<byte> input)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, VarBytes, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        fixed (byte* inputBytes = input)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            var inputArgument = new VarBytes(inputBytes, input.Length);
            return session.RMW(in keyArgument, in inputArgument);
        }
    }

    /// <summary>Read-modify-write of a UTF-8 string key with a byte-sequence input.</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.Pending"/> when it finishes in CompletePending.</returns>
    public static unsafe Status RMW<TValue, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, VarBytes, TOutput, TContext, TFunctions> session,
        string key,
        ReadOnlySpan<byte> input)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, VarBytes, TOutput, TContext>
    {
        using var utf8 = new Utf8Key(key, stackalloc byte[StackKeyBytes]);
        return session.RMW(utf8.Bytes, input);
    }

    /// <summary>Deletes a byte-sequence key.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/>.</returns>
    public static unsafe Status Delete<TValue, TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlySpan<byte> key)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        fixed (byte* keyBytes = key)
        {
            var keyArgument = new VarBytes(keyBytes, key.Length);
            return session.Delete(in keyArgument);
        }
    }

    /// <summary>Deletes a UTF-8 string key.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/>.</returns>
    public static unsafe Status Delete<TValue, TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, TInput, TOutput, TContext, TFunctions> session,
        string key)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, TInput, TOutput, TContext>
    {
        using var utf8 = new Utf8Key(key, stackalloc byte[StackKeyBytes]);
        return session.Delete(utf8.Bytes);
    }

    /// <summary>Inserts or overwrites a value, awaiting log space; both memories stay pinned until it completes.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    public static ValueTask<Status> UpsertAsync<TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlyMemory<byte> key,
        ReadOnlyMemory<byte> value,
        CancellationToken cancellationToken = default)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, TOutput, TContext> =>
        session.UpsertAsync(key, value, Expiration.Never, cancellationToken);

    /// <summary>Inserts or overwrites a value which expires as <paramref name="expiration"/> says, awaiting log space;
    /// both memories stay pinned until it completes.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    public static async ValueTask<Status> UpsertAsync<TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlyMemory<byte> key,
        ReadOnlyMemory<byte> value,
        Expiration expiration,
        CancellationToken cancellationToken = default)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        using MemoryHandle keyHandle = key.Pin();
        using MemoryHandle valueHandle = value.Pin();
        return await session.UpsertAsync(
            VarBytes.Pinned(keyHandle, key.Length), VarBytes.Pinned(valueHandle, value.Length), expiration,
            cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Reads a value into pooled memory, awaiting the device; the key stays pinned until it completes.</summary>
    /// <returns>The status and, when found, the value (dispose it to return it to the pool).</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    public static async ValueTask<ReadResult<IMemoryOwner<byte>?>> ReadAsync<TInput, TContext, TFunctions>(
        this Session<VarBytes, VarBytes, TInput, VarBytesOutput, TContext, TFunctions> session,
        ReadOnlyMemory<byte> key,
        CancellationToken cancellationToken = default)
        where TFunctions : struct, IFunctions<VarBytes, VarBytes, TInput, VarBytesOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        using MemoryHandle keyHandle = key.Pin();
        ReadResult<VarBytesOutput> result = await session.ReadAsync(
            VarBytes.Pinned(keyHandle, key.Length), cancellationToken: cancellationToken).ConfigureAwait(false);
        return new ReadResult<IMemoryOwner<byte>?>(
            result.Status, result.Status == Status.Ok ? result.Output.Memory : null);
    }

    /// <summary>Deletes a key, awaiting the device or log space; the key stays pinned until it completes.</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.NotFound"/> if the key did not exist.</returns>
    public static async ValueTask<Status> DeleteAsync<TValue, TInput, TOutput, TContext, TFunctions>(
        this Session<VarBytes, TValue, TInput, TOutput, TContext, TFunctions> session,
        ReadOnlyMemory<byte> key,
        CancellationToken cancellationToken = default)
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<VarBytes, TValue, TInput, TOutput, TContext>
    {
        ArgumentNullException.ThrowIfNull(session);
        using MemoryHandle keyHandle = key.Pin();
        return await session.DeleteAsync(VarBytes.Pinned(keyHandle, key.Length),
            cancellationToken: cancellationToken).ConfigureAwait(false);
    }

    /// <summary>A string's UTF-8 bytes, on the stack when short, otherwise in a rented array.</summary>
    private ref struct Utf8Key
    {
        private byte[]? _rented;

        public Utf8Key(string key, Span<byte> stackBuffer)
        {
            ArgumentNullException.ThrowIfNull(key);
            int maxBytes = Encoding.UTF8.GetMaxByteCount(key.Length);
            Span<byte> buffer = maxBytes <= stackBuffer.Length
                ? stackBuffer
                : (_rented = ArrayPool<byte>.Shared.Rent(maxBytes));
            Bytes = buffer[..Encoding.UTF8.GetBytes(key, buffer)];
        }

        public ReadOnlySpan<byte> Bytes { get; }

        public void Dispose()
        {
            if (_rented is not null)
            {
                ArrayPool<byte>.Shared.Return(_rented);
                _rented = null;
            }
        }
    }
}
