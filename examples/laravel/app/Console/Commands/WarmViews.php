<?php

namespace App\Console\Commands;

use Illuminate\Console\Command;
use Illuminate\View\Compilers\BladeCompiler;
use Symfony\Component\Finder\Finder;

/**
 * Compile the Blade views used by mail notifications (the framework's
 * "notifications" and markdown "mail" views) and the app's own views, but
 * only those whose compiled file is missing or stale. Unlike view:cache it
 * never clears storage/framework/views, so it is safe to run while workers
 * are rendering. Run by setup.sh.
 */
class WarmViews extends Command
{
    protected $signature = 'views:warm';

    protected $description = 'Compile stale/missing Blade views (notifications, markdown mail, resources/views) without clearing';

    public function handle()
    {
        $compiler = $this->laravel['view']->getEngineResolver()->resolve('blade')->getCompiler();
        $finder = $this->laravel['view']->getFinder();

        $mailViews = dirname((new \ReflectionClass(\Illuminate\Mail\Markdown::class))->getFileName()).'/resources/views';

        $paths = collect($finder->getPaths())
            ->merge(collect($finder->getHints())->flatten())
            ->push($mailViews)
            ->filter(function ($path) {
                return is_dir($path);
            })
            ->unique();

        $compiled = 0;
        foreach ($paths as $path) {
            foreach (Finder::create()->in($path)->files()->name('*.blade.php') as $file) {
                if ($this->compile($compiler, $file->getRealPath())) {
                    $compiled++;
                }
            }
        }

        $this->line("views:warm: compiled {$compiled} Blade view(s)");

        return 0;
    }

    protected function compile(BladeCompiler $compiler, $path)
    {
        if (! $compiler->isExpired($path)) {
            return false;
        }

        $compiler->compile($path);

        return true;
    }
}
