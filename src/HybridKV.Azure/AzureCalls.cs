using Azure;

namespace HybridKV.Azure;

/// <summary>
/// Runs one call to Azure Storage within <see cref="AzureRetryOptions.MaxTotalTime"/> (the SDK's retry policy retries
/// transient failures inside it) and turns every failure into an exception of the caller's kind whose message names
/// the blob and the HTTP status, never a credential.
/// </summary>
internal static class AzureCalls
{
    /// <summary>Makes the exception the caller surfaces (a device error, an I/O error) from a message and the failure.</summary>
    public delegate Exception Failure(string message, Exception inner);

    public static async Task<T> RunAsync<T>(
        Func<CancellationToken, Task<T>> call, string what, TimeSpan maxTotalTime, Failure fail,
        CancellationToken cancellationToken)
    {
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        deadline.CancelAfter(maxTotalTime);
        try
        {
            return await call(deadline.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException error) when (!cancellationToken.IsCancellationRequested)
        {
            throw fail($"{what} did not succeed within {maxTotalTime} (AzureRetryOptions.MaxTotalTime): transient " +
                       "failures were retried until then.", error);
        }
        catch (BlobLeaseLostException lost)
        {
            throw fail($"{what} was refused: {lost.Message}", lost);
        }
        catch (RequestFailedException error)
        {
            throw fail($"{what} failed: {Describe(error)}.", error);
        }
        catch (AggregateException error)
        {
            // The SDK's retry policy gave up after its last try: the inner exceptions are the tries' failures.
            throw fail($"{what} failed after {error.InnerExceptions.Count} tries " +
                       $"({Describe(error.InnerExceptions[^1])}).", error);
        }
        catch (Exception error) when (error is HttpRequestException or TimeoutException or System.Net.Sockets.SocketException
                                          || (error is IOException && error is not Devices.StorageDeviceException
                                              && error is not FileNotFoundException))
        {
            throw fail($"{what} failed: {Describe(error)}.", error);
        }
    }

    public static async Task RunAsync(
        Func<CancellationToken, Task> call, string what, TimeSpan maxTotalTime, Failure fail,
        CancellationToken cancellationToken) =>
        await RunAsync<bool>(async token =>
        {
            await call(token).ConfigureAwait(false);
            return true;
        }, what, maxTotalTime, fail, cancellationToken).ConfigureAwait(false);

    /// <summary>The status and error code of a failed request, or the kind of a network failure: no headers, no
    /// content, no URI.</summary>
    public static string Describe(Exception error) => error switch
    {
        RequestFailedException { Status: 0 } failed => $"no response ({failed.InnerException?.GetType().Name ?? "network failure"})",
        RequestFailedException failed => $"HTTP {failed.Status} ({failed.ErrorCode ?? "no error code"})",
        OperationCanceledException => "timed out",
        _ => error.GetType().Name,
    };

    public static bool IsStatus(this RequestFailedException error, int status, string? code = null) =>
        error.Status == status && (code is null || string.Equals(error.ErrorCode, code, StringComparison.Ordinal));
}
