<?php

namespace App\Providers;

use Illuminate\Cache\RateLimiting\Limit;
use Illuminate\Support\Facades\RateLimiter;
use Illuminate\Support\ServiceProvider;

class AppServiceProvider extends ServiceProvider
{
    /**
     * Register any application services.
     *
     * @return void
     */
    public function register()
    {
        //
    }

    /**
     * Bootstrap any application services.
     *
     * @return void
     */
    public function boot()
    {
        // App\Jobs\Limited's limiter (spec/middleware_spec.lua): 3 a minute for "acme";
        // its Lua twin declares the same limit
        RateLimiter::for('payments', function ($job) {
            return Limit::perMinute(3)->by('acme');
        });
    }
}
